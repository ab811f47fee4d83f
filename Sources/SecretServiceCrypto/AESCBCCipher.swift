import COpenSSL

/// AES-128-CBC with PKCS#7 padding under a session key, as the DH session algorithm carries secrets:
/// the 16-byte IV travels in the secret's `parameters`, the ciphertext in its `value`.
public struct AESCBCCipher: Sendable {
    public static let blockSize = 16
    private let key: LockedKey

    public init(key: LockedKey) {
        precondition(key.count == 16, "AES-128 needs a 16-byte key")
        self.key = key
    }

    /// Encrypts with a fresh random IV; returns (iv, ciphertext).
    public func seal(_ plaintext: [UInt8]) throws(SecretCryptoError) -> (iv: [UInt8], ciphertext: [UInt8]) {
        var iv = [UInt8](repeating: 0, count: Self.blockSize)
        guard RAND_bytes(&iv, Int32(iv.count)) == 1 else { throw .library("RAND_bytes") }
        let ciphertext = try run(encrypt: true, iv: iv, input: plaintext)
        return (iv, ciphertext)
    }

    /// Decrypts and checks the padding; bad sizes or padding are `malformedCiphertext`.
    public func open(iv: [UInt8], ciphertext: [UInt8]) throws(SecretCryptoError) -> [UInt8] {
        guard iv.count == Self.blockSize, !ciphertext.isEmpty, ciphertext.count % Self.blockSize == 0 else {
            throw .malformedCiphertext
        }
        return try run(encrypt: false, iv: iv, input: ciphertext)
    }

    func run(encrypt: Bool, iv: [UInt8], input: [UInt8]) throws(SecretCryptoError) -> [UInt8] {
        guard let context = EVP_CIPHER_CTX_new() else { throw .library("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }  // frees and cleanses the expanded key schedule
        let initialised = key.withUnsafeBytes { keyBytes in
            EVP_CipherInit_ex(
                context, EVP_aes_128_cbc(), nil,
                keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), iv, encrypt ? 1 : 0)
        }
        guard initialised == 1 else { throw .library("EVP_CipherInit_ex") }
        var output = [UInt8](repeating: 0, count: input.count + Self.blockSize)
        var written: Int32 = 0
        var finalWritten: Int32 = 0
        let ok = output.withUnsafeMutableBufferPointer { out -> Bool in
            guard EVP_CipherUpdate(context, out.baseAddress, &written, input, Int32(input.count)) == 1 else {
                return false
            }
            return EVP_CipherFinal_ex(context, out.baseAddress! + Int(written), &finalWritten) == 1
        }
        guard ok else {
            ERR_clear_error()
            throw encrypt ? .library("EVP_Cipher") : .malformedCiphertext
        }
        output.removeSubrange(Int(written + finalWritten)...)
        return output
    }
}
