/// An OpenSSH certificate (PROTOCOL.certkeys): a public key signed by a certificate authority.
/// Read only as far as the agent needs: the key it certifies, and the CA's key and signature
/// over the rest, so that the signature can be checked. Every field is bounded by the blob.
public struct SSHCertificate {
    /// The suffix of certificate type names (`ssh-ed25519-cert-v01@openssh.com`).
    public static let typeSuffix = "-cert-v01@openssh.com"

    /// The certified key's type.
    public let keyType: SSHKeyType
    /// The certified public key's fields as in a key blob after its type name.
    public let publicFields: [UInt8]
    /// The bytes the CA signed: the blob up to its signature.
    public let signedPart: [UInt8]
    public let signatureKey: [UInt8]
    public let signature: [UInt8]
    /// The end of its validity, in seconds since 1970 (`UInt64.max`: forever).
    public let validBefore: UInt64

    /// The certified key's type, for a certificate type name; nil for any other name.
    public static func keyType(ofCertificateType name: String) -> SSHKeyType? {
        guard name.hasSuffix(typeSuffix) else { return nil }
        return SSHKeyType(name: String(name.dropLast(typeSuffix.count)))
    }

    public init(_ blob: [UInt8]) throws(AgentParseError) {
        let parsed = try blob.withUnsafeBytes { buffer in
            Result { () throws(AgentParseError) in try Self.parse(buffer) }
        }.get()
        self = parsed
    }

    /// The plain key's blob: its type name and `publicFields`.
    public var keyBlob: [UInt8] {
        var writer = SSHWireWriter()
        writer.text(keyType.name)
        return writer.bytes + publicFields
    }

    /// The agent's encoding of this certificate with its key, as `SSH_AGENTC_ADD_IDENTITY`
    /// carries it: the certificate's type and blob, then the private fields of `key` (the plain
    /// key in the agent's encoding, as a key file holds it) that the certificate does not hold.
    /// The result holds private bytes: the caller wipes it. Throws when the key is not of the
    /// certified type.
    public func agentEncoding(_ blob: [UInt8], key: ArraySlice<UInt8>) throws(AgentParseError) -> [UInt8] {
        try key.withUnsafeBytes { buffer in
            Result { () throws(AgentParseError) -> [UInt8] in
                var reader = SSHWireReader(buffer)
                let name = try reader.text(maximum: 64)
                guard SSHKeyType(name: name) == keyType else {
                    throw AgentParseError("the certificate is of type \(keyType.name), the key of type \(name)")
                }
                if keyType != .ed25519 {
                    // The curve and point, or n and e: the certificate holds them. (Ed25519's
                    // public key is sent again, before the secret key.)
                    _ = try reader.stringBytes()
                    _ = try reader.stringBytes()
                }
                var writer = SSHWireWriter()
                writer.text(keyType.name + Self.typeSuffix)
                writer.string(blob)
                writer.bytes(UnsafeRawBufferPointer(rebasing: buffer[reader.offset...]))
                return writer.bytes
            }
        }.get()
    }

    private init(keyType: SSHKeyType, publicFields: [UInt8], signedPart: [UInt8], signatureKey: [UInt8], signature: [UInt8],
                 validBefore: UInt64) {
        self.keyType = keyType
        self.publicFields = publicFields
        self.signedPart = signedPart
        self.signatureKey = signatureKey
        self.signature = signature
        self.validBefore = validBefore
    }

    /// Whether it is past its validity at `now` (seconds since 1970).
    public func hasExpired(at now: UInt64) -> Bool { validBefore <= now }

    private static func parse(_ buffer: UnsafeRawBufferPointer) throws(AgentParseError) -> SSHCertificate {
        var reader = SSHWireReader(buffer)
        let name = try reader.text(maximum: 64)
        guard let keyType = keyType(ofCertificateType: name) else { throw AgentParseError("unsupported certificate type \"\(name)\"") }
        _ = try reader.stringBytes()  // nonce
        let fieldsStart = reader.offset
        switch keyType {
        case .ed25519:
            guard try reader.stringBytes().count == 32 else { throw AgentParseError("an Ed25519 certificate of the wrong size") }
        case .ecdsa(let curve):
            guard try reader.text(maximum: 16) == curve.rawValue else { throw AgentParseError("the certificate's curve does not match its type") }
            guard try reader.stringBytes().count == curve.pointBytes else { throw AgentParseError("an ECDSA certificate of the wrong size") }
        case .rsa:
            _ = try reader.positiveMPInt()  // e
            _ = try reader.positiveMPInt()  // n
        }
        let publicFields = Array(buffer[fieldsStart..<reader.offset])
        _ = try reader.uint32()
        _ = try reader.uint32()  // serial (uint64)
        _ = try reader.uint32()  // type
        for _ in 0..<2 { _ = try reader.stringBytes() }  // key id, principals
        _ = try reader.uint32()
        _ = try reader.uint32()  // valid after (uint64)
        let validBeforeHigh = UInt64(try reader.uint32())
        let validBefore = validBeforeHigh << 32 | UInt64(try reader.uint32())
        for _ in 0..<3 { _ = try reader.stringBytes() }  // critical options, extensions, reserved
        let signatureKey = try reader.string()
        let signedEnd = reader.offset
        let signature = try reader.string()
        try reader.expectEnd()
        return SSHCertificate(keyType: keyType, publicFields: publicFields, signedPart: Array(buffer[..<signedEnd]),
                              signatureKey: signatureKey, signature: signature, validBefore: validBefore)
    }
}
