import COpenSSL
import CSodium
import KeywellCore

/// The primitives the keyring formats use, over OpenSSL (legacy MD5 included: gnome-keyring's
/// check of a decrypted block and its attribute hashes are MD5).
enum KeyringCrypto {
    static func digest(_ name: String, _ input: UnsafeRawBufferPointer) -> [UInt8] {
        let md = EVP_MD_fetch(nil, name, nil)
        defer { EVP_MD_free(md) }
        var output = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        let ok = EVP_Digest(input.baseAddress, input.count, &output, &length, md, nil)
        precondition(ok == 1, "\(name) digest failed")
        return Array(output[0..<Int(length)])
    }

    static func sha256(_ input: UnsafeRawBufferPointer) -> [UInt8] { digest("SHA256", input) }
    static func md5(_ input: UnsafeRawBufferPointer) -> [UInt8] { digest("MD5", input) }
    static func md5(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { md5($0) } }

    /// gnome-keyring's key and IV: SHA-256 over password and salt, then `iterations - 1` more
    /// rounds over the digest; the first 16 bytes are the AES-128 key, the next 16 the IV.
    static func iteratedSHA256(password: SecretBytes, salt: [UInt8], iterations: UInt32) -> SecretBytes {
        let digest = SecretBytes(count: 32)
        digest.withUnsafeMutableBytes { out in
            let md = EVP_MD_fetch(nil, "SHA256", nil)
            let context = EVP_MD_CTX_new()
            defer { EVP_MD_CTX_free(context); EVP_MD_free(md) }
            var length: UInt32 = 0
            EVP_DigestInit_ex(context, md, nil)
            password.withUnsafeBytes { _ = EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
            EVP_DigestUpdate(context, salt, salt.count)
            EVP_DigestFinal_ex(context, out.baseAddress!.assumingMemoryBound(to: UInt8.self), &length)
            var round: UInt32 = 1
            while round < iterations {
                EVP_DigestInit_ex(context, md, nil)
                EVP_DigestUpdate(context, out.baseAddress, 32)
                EVP_DigestFinal_ex(context, out.baseAddress!.assumingMemoryBound(to: UInt8.self), &length)
                round += 1
            }
        }
        return digest
    }

    static func pbkdf2SHA256(password: SecretBytes, salt: [UInt8], iterations: UInt32, length: Int) -> SecretBytes {
        let key = SecretBytes(count: length)
        key.withUnsafeMutableBytes { out in
            password.withUnsafeBytes { pw in
                let ok = PKCS5_PBKDF2_HMAC(pw.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(pw.count),
                                           salt, Int32(salt.count), Int32(iterations), EVP_sha256(),
                                           Int32(length), out.baseAddress!.assumingMemoryBound(to: UInt8.self))
                precondition(ok == 1, "PBKDF2 failed")
            }
        }
        return key
    }

    static func hmacSHA256(key: UnsafeRawBufferPointer, _ input: UnsafeRawBufferPointer) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length = 0
        let result = "SHA256".withCString { digestName in
            EVP_Q_mac(nil, "HMAC", nil, digestName, nil, key.baseAddress, key.count,
                      input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, &output, output.count, &length)
        }
        precondition(result != nil && length == 32, "HMAC-SHA256 failed")
        return output
    }

    /// AES-128-CBC without padding over whole blocks, into locked memory.
    static func aes128CBC(encrypt: Bool, key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer,
                          _ input: UnsafeRawBufferPointer) -> SecretBytes? {
        guard input.count % 16 == 0, key.count >= 16, iv.count >= 16 else { return nil }
        let output = SecretBytes(count: input.count)
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        let ok = output.withUnsafeMutableBytes { out -> Bool in
            guard EVP_CipherInit_ex(context, EVP_aes_128_cbc(), nil, key.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                    iv.baseAddress!.assumingMemoryBound(to: UInt8.self), encrypt ? 1 : 0) == 1,
                  EVP_CIPHER_CTX_set_padding(context, 0) == 1 else { return false }
            var written: Int32 = 0
            var finalWritten: Int32 = 0
            guard input.isEmpty || EVP_CipherUpdate(context, out.baseAddress!.assumingMemoryBound(to: UInt8.self), &written,
                                                    input.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(input.count)) == 1
            else { return false }
            return EVP_CipherFinal_ex(context, out.baseAddress!.assumingMemoryBound(to: UInt8.self) + Int(written), &finalWritten) == 1
        }
        return ok ? output : nil
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return bytes
    }

    /// Constant-time comparison of two MACs or digests.
    static func equal(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<a.count { difference |= a[index] ^ b[index] }
        return difference == 0
    }

}
