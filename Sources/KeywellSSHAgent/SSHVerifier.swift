import COpenSSL
import CSodium
import KeywellSSHWire

/// Checks a signature by a public key in SSH's encodings, as OpenSSH's agent checks the host's
/// signature in `session-bind@openssh.com` before it records the host (docs/ssh.md): Ed25519 with
/// libsodium, ECDSA and RSA with libcrypto. Any malformed input is simply not a valid signature.
enum SSHVerifier {
    static func verify(publicKey: [UInt8], signature: [UInt8], data: [UInt8]) -> Bool {
        let checked = publicKey.withUnsafeBytes { key in
            signature.withUnsafeBytes { signature in
                Result { () throws(AgentParseError) -> Bool in try verify(key, signature, data) }
            }
        }
        return (try? checked.get()) ?? false
    }

    private static func verify(_ keyBytes: UnsafeRawBufferPointer, _ signatureBytes: UnsafeRawBufferPointer,
                               _ data: [UInt8]) throws(AgentParseError) -> Bool {
        var key = SSHWireReader(keyBytes)
        var signature = SSHWireReader(signatureBytes)
        guard let type = SSHKeyType(name: try key.text(maximum: 64)) else { return false }
        let algorithm = try signature.text(maximum: 64)
        let value = try signature.stringBytes()
        try signature.expectEnd()
        switch type {
        case .ed25519:
            let publicKey = try key.stringBytes()
            try key.expectEnd()
            guard algorithm == type.name, publicKey.count == Int(crypto_sign_PUBLICKEYBYTES), value.count == Int(crypto_sign_BYTES) else {
                return false
            }
            return crypto_sign_verify_detached(value.baseAddress!.assumingMemoryBound(to: UInt8.self), data, UInt64(data.count),
                                               publicKey.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
        case .ecdsa(let curve):
            guard try key.text(maximum: 16) == curve.rawValue, algorithm == type.name else { return false }
            let point = try key.stringBytes()
            try key.expectEnd()
            var integers = SSHWireReader(value)
            let r = Array(try integers.positiveMPInt())
            let s = Array(try integers.positiveMPInt())
            try integers.expectEnd()
            let der = DERSignature.encode(r, s)
            return withPublicKey("EC", [.text("group", curve.openSSLGroup), .octets("pub", point)]) {
                digestVerify($0, curve.digest, der, data)
            }
        case .rsa:
            let exponent = try key.positiveMPInt()
            let modulus = try key.positiveMPInt()
            try key.expectEnd()
            let digest: SSHDigest
            switch algorithm {
            case "rsa-sha2-256": digest = .sha256
            case "rsa-sha2-512": digest = .sha512
            case "ssh-rsa": digest = .sha1
            default: return false
            }
            let signatureBytes = Array(value)
            return withPublicKey("RSA", [.number("n", modulus), .number("e", exponent)]) {
                digestVerify($0, digest, signatureBytes, data)
            }
        }
    }

    /// One part of a public key for OpenSSL's builder.
    private enum Part {
        case text(StaticString, StaticString)
        case octets(StaticString, UnsafeRawBufferPointer)
        case number(StaticString, UnsafeRawBufferPointer)
    }

    /// `EVP_PKEY_PUBLIC_KEY`: a macro Swift does not import (the public key and all parameters).
    private static let publicKeySelection: Int32 = 0x86

    private static func withPublicKey(_ algorithm: StaticString, _ parts: [Part], _ body: (OpaquePointer) -> Bool) -> Bool {
        guard let builder = OSSL_PARAM_BLD_new() else { return false }
        defer { OSSL_PARAM_BLD_free(builder) }
        // The builder keeps pointers to the numbers until the parameters are made.
        var numbers: [OpaquePointer] = []
        defer { numbers.forEach { BN_free($0) } }
        for part in parts {
            let pushed: Bool
            switch part {
            case .text(let name, let value):
                pushed = OSSL_PARAM_BLD_push_utf8_string(builder, cString(name), cString(value), 0) == 1
            case .octets(let name, let bytes):
                pushed = OSSL_PARAM_BLD_push_octet_string(builder, cString(name), bytes.baseAddress, bytes.count) == 1
            case .number(let name, let magnitude):
                guard let number = BN_bin2bn(magnitude.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(magnitude.count), nil) else {
                    return false
                }
                numbers.append(number)
                pushed = OSSL_PARAM_BLD_push_BN(builder, cString(name), number) == 1
            }
            guard pushed else { return false }
        }
        guard let parameters = OSSL_PARAM_BLD_to_param(builder) else { return false }
        defer { OSSL_PARAM_free(parameters) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, cString(algorithm), nil) else { return false }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1, EVP_PKEY_fromdata(context, &key, publicKeySelection, parameters) == 1, let key else {
            _ = openSSLReason()
            return false
        }
        defer { EVP_PKEY_free(key) }
        return body(key)
    }

    private static func digestVerify(_ key: OpaquePointer, _ digest: SSHDigest, _ signature: [UInt8], _ data: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest.openSSLDigest, nil, key) == 1 else { return false }
        let verified = EVP_DigestVerify(context, signature, signature.count, data, data.count) == 1
        if !verified { _ = openSSLReason() }
        return verified
    }
}
