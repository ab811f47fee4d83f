import KeywellProtocol

/// `error [code...]`: `Error: 0x%08X %d <message>` per code on stdout; always exit 1, as in
/// `security`. Codes are read like strtoul(…, 0): decimal, 0x hex or 0 octal, with a sign.
enum ErrorCommand {
    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        for word in invocation.words.dropFirst() where word != "error" {
            let status = OSStatus(truncatingIfNeeded: parseNumber(word))
            let pattern = UInt32(bitPattern: status)
            context.output.write("Error: 0x\(Hex.upper32(pattern)) \(status) \(SecStatus.message(for: status))\n")
        }
        return CommandStatus.failure
    }

    /// strtoul with base 0, keeping the low 64 bits; junk after the digits is ignored.
    static func parseNumber(_ text: String) -> Int64 {
        var bytes = Substring(text).drop { $0 == " " || $0 == "\t" }
        var negative = false
        if let sign = bytes.first, sign == "-" || sign == "+" {
            negative = sign == "-"
            bytes = bytes.dropFirst()
        }
        var radix = 10
        if bytes.hasPrefix("0x") || bytes.hasPrefix("0X") {
            radix = 16
            bytes = bytes.dropFirst(2)
        } else if bytes.hasPrefix("0") {
            radix = 8
        }
        var value: UInt64 = 0
        for character in bytes {
            guard let digit = character.hexDigitValue, digit < radix else { break }
            value = value &* UInt64(radix) &+ UInt64(digit)
        }
        let signed = Int64(bitPattern: value)
        return negative ? 0 &- signed : signed
    }
}
