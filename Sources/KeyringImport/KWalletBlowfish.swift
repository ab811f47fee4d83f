import COpenSSL
import KeywellCore

/// KWallet's own CBC over Blowfish (docs/migration.md, "KWallet's wallet file"), decrypting only,
/// with OpenSSL's Blowfish from its legacy provider: standard Blowfish on each 8-byte block, CBC
/// from an all-zero IV, the chaining XOR done here.
enum KWalletBlowfish {
    static let blockSize = 8
    /// KWallet's key: 56 bytes of PBKDF2-SHA512 (Blowfish's largest key, 448 bits).
    static let keySize = 56

    /// Nil when OpenSSL's legacy provider (Blowfish) is missing or the input is not whole blocks.
    static func decrypt(_ ciphertext: UnsafeRawBufferPointer, key: SecretBytes) -> SecretBytes? {
        guard ciphertext.count % blockSize == 0, key.count == keySize else { return nil }
        // A private library context: loading the legacy provider into the default one would
        // stop OpenSSL loading its default provider for everything else in the process.
        guard let library = OSSL_LIB_CTX_new() else { return nil }
        defer { OSSL_LIB_CTX_free(library) }
        guard let legacy = OSSL_PROVIDER_load(library, "legacy") else { return nil }
        defer { OSSL_PROVIDER_unload(legacy) }
        guard let cipher = EVP_CIPHER_fetch(library, "BF-ECB", nil) else { return nil }
        defer { EVP_CIPHER_free(cipher) }
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }

        let blocks = [UInt8](ciphertext)
        let output = SecretBytes(count: ciphertext.count)
        let decrypted = output.withUnsafeMutableBytes { out -> Bool in
            let out = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let keyed = key.withUnsafeBytes { keyBytes -> Bool in
                EVP_DecryptInit_ex(context, cipher, nil, nil, nil) == 1
                    && EVP_CIPHER_CTX_set_key_length(context, Int32(keySize)) == 1
                    && EVP_DecryptInit_ex(context, nil, nil, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), nil) == 1
            }
            guard keyed, EVP_CIPHER_CTX_set_padding(context, 0) == 1 else { return false }
            guard !blocks.isEmpty else { return true }
            var written: Int32 = 0
            var finalWritten: Int32 = 0
            return EVP_DecryptUpdate(context, out, &written, blocks, Int32(blocks.count)) == 1
                && EVP_DecryptFinal_ex(context, out + Int(written), &finalWritten) == 1
        }
        guard decrypted else { return nil }
        output.withUnsafeMutableBytes { plain in
            // Chaining: each block XOR the ciphertext block before it (zeros before the first).
            for index in blockSize..<max(blockSize, plain.count) {
                plain[index] ^= ciphertext[index - blockSize]
            }
        }
        return output
    }

    /// PBKDF2-HMAC-SHA512 of the password with the wallet's `.salt` file, 50 000 rounds, 56 bytes:
    /// the key kwalletd derives from a typed password and pam_kwallet from the login password.
    static func key(password: SecretBytes, salt: [UInt8]) -> SecretBytes {
        let key = SecretBytes(count: keySize)
        key.withUnsafeMutableBytes { out in
            password.withUnsafeBytes { pw in
                let ok = PKCS5_PBKDF2_HMAC(pw.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(pw.count),
                                           salt, Int32(salt.count), 50_000, EVP_sha512(),
                                           Int32(keySize), out.baseAddress!.assumingMemoryBound(to: UInt8.self))
                precondition(ok == 1, "PBKDF2 failed")
            }
        }
        return key
    }

    /// KWallet's check of the data, from its own SHA-1 code as built on little-endian machines:
    /// SHA-1 with each 32-bit word of the padded message read little-endian and the five digest
    /// words written little-endian (docs/migration.md, "KWallet's wallet file"). OpenSSL's
    /// SHA-1 compression does the rounds over the byte-swapped blocks.
    static func littleEndianSHA1(_ data: UnsafeRawBufferPointer) -> [UInt8] {
        var message = [UInt8](data)
        let bitCount = UInt64(data.count) * 8
        message.append(0x80)
        while message.count % 64 != 56 { message.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { message.append(UInt8(truncatingIfNeeded: bitCount >> UInt64(shift))) }
        var index = 0
        while index < message.count {
            message.swapAt(index, index + 3)
            message.swapAt(index + 1, index + 2)
            index += 4
        }
        var context = SHA_CTX()
        SHA1_Init(&context)
        message.withUnsafeBufferPointer { blocks in
            for start in stride(from: 0, to: blocks.count, by: 64) { SHA1_Transform(&context, blocks.baseAddress! + start) }
        }
        defer { message.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        var digest: [UInt8] = []
        for word in [context.h0, context.h1, context.h2, context.h3, context.h4] {
            digest += [UInt8(word & 0xff), UInt8(word >> 8 & 0xff), UInt8(word >> 16 & 0xff), UInt8(word >> 24 & 0xff)]
        }
        return digest
    }
}
