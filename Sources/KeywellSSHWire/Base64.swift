/// Standard base64 (RFC 4648 §4), for fingerprints and public key lines.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: [UInt8], padding: Bool = true) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let value = UInt32(chunk[0]) << 16 | UInt32(chunk.count > 1 ? chunk[1] : 0) << 8 | UInt32(chunk.count > 2 ? chunk[2] : 0)
            for position in 0..<4 {
                if position <= chunk.count {
                    output.append(alphabet[Int(value >> (18 - 6 * UInt32(position)) & 0x3f)])
                } else if padding {
                    output.append(UInt8(ascii: "="))
                }
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of standard base64 text (padding optional, no other characters); nil when damaged.
    public static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        for byte in text.utf8 where byte != UInt8(ascii: "=") {
            guard let value = alphabet.firstIndex(of: byte) else { return nil }
            values.append(UInt8(value))
        }
        guard values.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(values.count * 3 / 4)
        var index = 0
        while index < values.count {
            let chunk = values[index..<min(index + 4, values.count)]
            var bits: UInt32 = 0
            for (position, value) in chunk.enumerated() { bits |= UInt32(value) << (18 - 6 * UInt32(position)) }
            for position in 0..<(chunk.count - 1) { output.append(UInt8(bits >> (16 - 8 * UInt32(position)) & 0xff)) }
            index += 4
        }
        return output
    }
}
