import CSodium
import KeywellCore
import KeywellSSHWire

/// A private key as the agent holds it: its public blob, its comment, and the private part in
/// the agent protocol's own encoding (the key type's name, then its fields), in locked memory
/// that is wiped when the value goes away. That encoding is what a key item stores, sealed, as
/// its secret (docs/ssh.md, "How a key is stored").
public struct SSHKeyPair: Sendable {
    public let type: SSHKeyType
    public let publicBlob: [UInt8]
    public let privateKey: SecretBytes
    public var comment: String

    public init(type: SSHKeyType, publicBlob: [UInt8], privateKey: SecretBytes, comment: String) {
        self.type = type
        self.publicBlob = publicBlob
        self.privateKey = privateKey
        self.comment = comment
    }

    /// `SHA256:<base64 without padding>` of the plain key, as `ssh-add -l` prints it for the
    /// key and for its certificates.
    public var fingerprint: String { SSHFingerprint.sha256(keyBlob) }

    /// The plain key's blob: `publicBlob`, or for a certificate the key it certifies.
    public var keyBlob: [UInt8] { Self.keyBlob(of: publicBlob) }

    /// The plain key's blob of a listed blob (a key's or a certificate's).
    public static func keyBlob(of publicBlob: [UInt8]) -> [UInt8] {
        (try? SSHCertificate(publicBlob))?.keyBlob ?? publicBlob
    }

    /// Reads a private key in the agent's encoding at `reader` (an `ADD_IDENTITY`'s key, up to
    /// its comment), checks it is whole and consistent (the public part belongs to the private
    /// one), and copies it to locked memory. Nothing is kept when it fails.
    public static func read(_ reader: inout SSHWireReader) throws(AgentParseError) -> (type: SSHKeyType, publicBlob: [UInt8], privateKey: SecretBytes) {
        let start = reader.offset
        let typeName = try reader.text(maximum: 64)
        if SSHCertificate.keyType(ofCertificateType: typeName) != nil { return try readCertified(&reader) }
        guard let type = SSHKeyType(name: typeName) else { throw AgentParseError("unsupported key type \"\(typeName)\"") }
        var blob = SSHWireWriter()
        blob.text(type.name)
        switch type {
        case .ed25519:
            let publicKey = try reader.stringBytes()
            let secretKey = try reader.stringBytes()
            guard publicKey.count == Int(crypto_sign_PUBLICKEYBYTES), secretKey.count == Int(crypto_sign_SECRETKEYBYTES) else {
                throw AgentParseError("an Ed25519 key of the wrong size")
            }
            // libsodium's secret key is the seed followed by the public key.
            guard sodium_memcmp(secretKey.baseAddress! + 32, publicKey.baseAddress!, 32) == 0 else {
                throw AgentParseError("the Ed25519 public key does not match the private key")
            }
            blob.string(publicKey)
        case .ecdsa(let curve):
            let curveName = try reader.text(maximum: 16)
            guard curveName == curve.rawValue else { throw AgentParseError("the ECDSA key's curve does not match its type") }
            let point = try reader.stringBytes()
            let scalar = try reader.positiveMPInt()
            guard point.count == curve.pointBytes, point.first == 4, !scalar.isEmpty, scalar.count <= curve.scalarBytes else {
                throw AgentParseError("an ECDSA key of the wrong size")
            }
            blob.text(curve.rawValue)
            blob.string(point)
        case .rsa:
            let modulus = try reader.positiveMPInt()
            let exponent = try reader.positiveMPInt()
            for _ in 0..<4 { _ = try reader.positiveMPInt() }  // d, iqmp, p, q
            let bits = modulus.count * 8
            guard bits >= AgentLimits.minimumRSABits, bits <= AgentLimits.maximumRSABits + 8, !exponent.isEmpty else {
                throw AgentParseError("an RSA key of an unsupported size")
            }
            blob.mpint(magnitude: exponent)
            blob.mpint(magnitude: modulus)
        }
        let privateKey = SecretBytes(copying: UnsafeRawBufferPointer(rebasing: reader.buffer[start..<reader.offset]))
        // The fields' sizes were checked above; OpenSSL now checks the numbers themselves.
        do throws(SigningError) { try SSHSigner.check(privateKey) } catch { throw AgentParseError("the key is not valid: \(error.reason)") }
        return (type, blob.bytes, privateKey)
    }

    /// A certificate and its key (after the certificate's type name): the certificate is the
    /// public blob, and the private key is kept in the plain key's encoding, built from the
    /// certificate's public fields and the message's private ones. The CA's signature is checked,
    /// as OpenSSH's agent checks it.
    private static func readCertified(_ reader: inout SSHWireReader) throws(AgentParseError) -> (type: SSHKeyType, publicBlob: [UInt8], privateKey: SecretBytes) {
        let blob = try reader.string()
        let certificate = try SSHCertificate(blob)
        guard SSHVerifier.verify(publicKey: certificate.signatureKey, signature: certificate.signature, data: certificate.signedPart) else {
            throw AgentParseError("the certificate's signature does not verify")
        }
        var plain = SSHWireWriter()
        plain.text(certificate.keyType.name)
        switch certificate.keyType {
        case .ed25519:
            let publicKey = try reader.stringBytes()
            let secretKey = try reader.stringBytes()
            guard Array(certificate.publicFields.dropFirst(4)) == Array(publicKey) else {
                throw AgentParseError("the certificate is for another key")
            }
            plain.string(publicKey)
            plain.string(secretKey)
        case .ecdsa:
            plain.bytes(certificate.publicFields)
            plain.mpint(magnitude: try reader.positiveMPInt())
        case .rsa:
            // The certificate holds e then n; the key's encoding wants n then e.
            let (exponent, modulus) = try certificate.publicFields.withUnsafeBytes { fields in
                Result { () throws(AgentParseError) in
                    var publicReader = SSHWireReader(fields)
                    return (Array(try publicReader.positiveMPInt()), Array(try publicReader.positiveMPInt()))
                }
            }.get()
            plain.mpint(magnitude: modulus)
            plain.mpint(magnitude: exponent)
            for _ in 0..<4 { plain.mpint(magnitude: try reader.positiveMPInt()) }  // d, iqmp, p, q
        }
        let encoded = plain.bytes
        defer { SecretWipe.wipe(encoded) }
        let privateKey = SecretBytes(copying: encoded)
        let parts = try publicParts(of: privateKey)
        guard parts.publicBlob == certificate.keyBlob else { throw AgentParseError("the certificate is for another key") }
        return (parts.type, blob, privateKey)
    }

    /// The key type and public blob of a stored private key (as `read` made it).
    public static func publicParts(of privateKey: SecretBytes) throws(AgentParseError) -> (type: SSHKeyType, publicBlob: [UInt8]) {
        try privateKey.withUnsafeBytes { buffer throws(AgentParseError) in
            var reader = SSHWireReader(buffer)
            let parsed = try read(&reader)
            try reader.expectEnd()
            return (parsed.type, parsed.publicBlob)
        }
    }
}

/// Key fingerprints as OpenSSH prints them.
public enum SSHFingerprint {
    public static func sha256(_ publicBlob: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        crypto_hash_sha256(&digest, publicBlob, UInt64(publicBlob.count))
        return "SHA256:" + Base64.encode(digest, padding: false)
    }
}
