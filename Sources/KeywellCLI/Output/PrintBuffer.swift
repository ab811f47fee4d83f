import KeywellSystem
/// `security`'s `print_buffer`: how every attribute value, `password:` and `data:` are shown.
///
/// Bytes 0x20–0x7E other than `\` are printable. If any byte is not, the whole value comes
/// first as `0x` + uppercase hex, then a space if printable bytes follow, then always one more
/// space. If any byte is printable, the value follows in double quotes with the others as
/// three-digit octal escapes. No bytes prints nothing.
enum PrintBuffer {
    static func isPrintable(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte <= 0x7E && byte != UInt8(ascii: "\\")
    }

    static func render<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        var hasPrintable = false
        var hasHex = false
        for byte in bytes {
            if isPrintable(byte) { hasPrintable = true } else { hasHex = true }
        }
        var text = ""
        if hasHex {
            text += "0x"
            for byte in bytes { text += Hex.upper(byte) }
            if hasPrintable { text += " " }
            text += " "
        }
        if hasPrintable {
            text += "\""
            for byte in bytes {
                if isPrintable(byte) {
                    text.unicodeScalars.append(Unicode.Scalar(byte))
                } else {
                    text += "\\" + Hex.octal3(byte)
                }
            }
            text += "\""
        }
        return text
    }

    /// `print_uint32`: the number's big-endian bytes, rendered.
    static func render(uint32 value: UInt32) -> String {
        render(FourCharCode.bytes(value))
    }
}

/// The small number formats the renderers need, without Foundation's String(format:).
enum Hex {
    private static let upperDigits = Array("0123456789ABCDEF".utf8)

    static func upper(_ byte: UInt8) -> String {
        String(decoding: [upperDigits[Int(byte >> 4)], upperDigits[Int(byte & 0xF)]], as: UTF8.self)
    }


    static func octal3(_ byte: UInt8) -> String {
        let digits = [byte >> 6, (byte >> 3) & 7, byte & 7].map { UInt8(ascii: "0") + $0 }
        return String(decoding: digits, as: UTF8.self)
    }

    /// `%08X` of a 32-bit pattern.
    static func upper32(_ value: UInt32) -> String {
        FourCharCode.bytes(value).map(upper).joined()
    }

    /// Hex digits (either case) to bytes; an odd count is zero-padded in front (`fff` is 0F FF).
    /// nil when a character is not a hex digit.
    static func decode(_ text: String) -> [UInt8]? {
        var nibbles: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibbles.append(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibbles.append(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibbles.append(byte - UInt8(ascii: "A") + 10)
            default: return nil
            }
        }
        // The digits are a password: wipe the intermediate copy.
        defer { nibbles.withUnsafeMutableBytes { SecretMemory.wipe($0) } }
        if nibbles.count % 2 == 1 { nibbles.insert(0, at: 0) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(nibbles.count / 2)
        var index = 0
        while index < nibbles.count {
            bytes.append(nibbles[index] << 4 | nibbles[index + 1])
            index += 2
        }
        return bytes
    }
}
