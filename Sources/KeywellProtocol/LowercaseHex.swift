/// Bytes as lowercase hexadecimal, two digits a byte: SHA-256 digests in application identities,
/// hashes in keyring files, `-x` renderings of the CLI. One definition for every part.
public enum LowercaseHex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func string<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
