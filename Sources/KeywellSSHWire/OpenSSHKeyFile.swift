/// An OpenSSH private key file (`-----BEGIN OPENSSH PRIVATE KEY-----`, the openssh-key-v1
/// format): its cipher, and, unencrypted, its keys in the agent protocol's encoding, ready for an
/// add request (docs/ssh.md, "keywell ssh-add"). Only reads: every length is bounded by the file.
public enum OpenSSHKeyFile {
    /// The largest key file read (a 16384-bit RSA key is about 12 KiB).
    public static let maximumFileBytes = 64 * 1024
    /// Keys in one file (OpenSSH writes one).
    public static let maximumKeys = 16

    static let begin = "-----BEGIN OPENSSH PRIVATE KEY-----"
    static let end = "-----END OPENSSH PRIVATE KEY-----"
    static let magic = Array("openssh-key-v1".utf8) + [0]

    /// One key of the file: the bytes of its type and numbers (the agent's encoding) and its comment.
    public struct Key {
        public let agentEncoding: ArraySlice<UInt8>
        public let comment: String
    }

    /// The binary inside the armour. Throws for anything but one well-formed block.
    public static func binary(_ file: [UInt8]) throws(AgentParseError) -> [UInt8] {
        guard file.count <= maximumFileBytes else { throw AgentParseError("the file is larger than \(maximumFileBytes) bytes") }
        let text = String(decoding: file, as: UTF8.self)
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters() }
        guard let first = lines.firstIndex(of: begin), let last = lines.firstIndex(of: end), first < last else {
            throw AgentParseError("not an OpenSSH private key file (no \(begin) block)")
        }
        guard let bytes = Base64.decode(lines[(first + 1)..<last].joined()) else { throw AgentParseError("the key's base64 is damaged") }
        guard bytes.starts(with: magic) else { throw AgentParseError("not an openssh-key-v1 key") }
        return bytes
    }

    /// The cipher that protects the keys: "none" for a file without a passphrase.
    public static func cipher(of binary: [UInt8]) throws(AgentParseError) -> String {
        try binary.withUnsafeBytes { buffer in
            Result { () throws(AgentParseError) in
                var reader = try afterMagic(buffer)
                return try reader.text(maximum: 64)
            }
        }.get()
    }

    /// The keys of an unencrypted file, as slices of `binary` (which holds them: wipe it after use).
    public static func keys(of binary: [UInt8]) throws(AgentParseError) -> [Key] {
        try binary.withUnsafeBytes { buffer in
            Result { () throws(AgentParseError) in try keys(buffer, base: binary) }
        }.get()
    }

    /// A reader past the format's magic, which must be there.
    private static func afterMagic(_ buffer: UnsafeRawBufferPointer) throws(AgentParseError) -> SSHWireReader {
        guard buffer.starts(with: magic) else { throw AgentParseError("not an openssh-key-v1 key") }
        return SSHWireReader(UnsafeRawBufferPointer(rebasing: buffer[magic.count...]))
    }

    private static func keys(_ buffer: UnsafeRawBufferPointer, base: [UInt8]) throws(AgentParseError) -> [Key] {
        var reader = try afterMagic(buffer)
        let cipher = try reader.text(maximum: 64)
        let kdf = try reader.text(maximum: 64)
        _ = try reader.stringBytes()  // the KDF's options
        guard cipher == "none", kdf == "none" else { throw AgentParseError("the key is encrypted (\(cipher), \(kdf))") }
        let count = Int(try reader.uint32())
        guard count >= 1, count <= maximumKeys else { throw AgentParseError("a file with \(count) keys") }
        for _ in 0..<count { _ = try reader.stringBytes() }  // the public keys, again in the private part
        let privateSection = try reader.stringBytes()
        try reader.expectEnd()
        let sectionStart = privateSection.baseAddress! - buffer.baseAddress!
        var section = SSHWireReader(privateSection)
        guard try section.uint32() == section.uint32() else { throw AgentParseError("the key's check numbers differ") }
        var keys: [Key] = []
        for _ in 0..<count {
            let start = section.offset
            try SSHKeyFields.skip(&section)
            let end = section.offset
            let comment = try section.text(maximum: AgentLimits.maximumComment)
            keys.append(Key(agentEncoding: base[(sectionStart + start)..<(sectionStart + end)], comment: comment))
        }
        // Padding: 1, 2, 3, … up to the cipher's block.
        var expected: UInt8 = 1
        while !section.isAtEnd {
            guard try section.byte() == expected else { throw AgentParseError("the key's padding is damaged") }
            expected += 1
        }
        return keys
    }
}

/// How many fields each key type has in the agent's encoding (and in openssh-key-v1's private
/// part, which uses the same): what a reader skips to find the comment after a key.
public enum SSHKeyFields {
    public static func skip(_ reader: inout SSHWireReader) throws(AgentParseError) {
        let name = try reader.text(maximum: 64)
        guard let type = SSHKeyType(name: name) else { throw AgentParseError("unsupported key type \"\(name)\"") }
        let strings: Int
        switch type {
        case .ed25519: strings = 2  // public key, secret key
        case .ecdsa: strings = 3  // curve, point, scalar
        case .rsa: strings = 6  // n, e, d, iqmp, p, q
        }
        for _ in 0..<strings { _ = try reader.stringBytes() }
    }
}

extension Substring {
    fileprivate func trimmingCharacters() -> String {
        String(self.drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
    }
}
