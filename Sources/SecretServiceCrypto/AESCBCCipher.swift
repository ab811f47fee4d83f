import COpenSSL
import CSodium
import KeywellSystem

/// AES-128-CBC with PKCS#7 padding under a session key, as the DH session algorithm carries secrets:
/// the 16-byte IV travels in the secret's `parameters`, the ciphertext in its `value`.
public struct AESCBCCipher: Sendable {
    public static let blockSize = 16
    private let key: SecretBytes

    public init(key: SecretBytes) {
        precondition(key.count == 16, "AES-128 needs a 16-byte key")
        self.key = key
    }

    /// Encrypts with a fresh random IV; returns (iv, ciphertext).
    public func seal(_ plaintext: [UInt8]) throws(SecretCryptoError) -> (iv: [UInt8], ciphertext: [UInt8]) {
        try sealAll([plaintext])[0]
    }

    /// Encrypts each plaintext with a fresh random IV of its own. One cipher context and one draw
    /// of random bytes serve them all (GetSecrets of a thousand items), instead of one each.
    /// The IVs come from libsodium (the kernel's getrandom): in a profile, OpenSSL's RAND_bytes
    /// took three fifths of a GetSecret's sealing, more than the encryption itself.
    public func sealAll(_ plaintexts: [[UInt8]]) throws(SecretCryptoError) -> [(iv: [UInt8], ciphertext: [UInt8])] {
        guard !plaintexts.isEmpty else { return [] }
        var ivs = [UInt8](repeating: 0, count: Self.blockSize * plaintexts.count)
        ivs.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        let context = try CipherContext(key: key, encrypt: true)
        var sealed: [(iv: [UInt8], ciphertext: [UInt8])] = []
        sealed.reserveCapacity(plaintexts.count)
        for (index, plaintext) in plaintexts.enumerated() {
            let iv = Array(ivs[index * Self.blockSize..<(index + 1) * Self.blockSize])
            sealed.append((iv, try context.run(iv: iv, input: plaintext, encrypt: true)))
        }
        return sealed
    }

    /// Decrypts and checks the padding; bad sizes or padding are `malformedCiphertext`.
    public func open(iv: [UInt8], ciphertext: [UInt8]) throws(SecretCryptoError) -> [UInt8] {
        guard iv.count == Self.blockSize, !ciphertext.isEmpty, ciphertext.count % Self.blockSize == 0 else {
            throw .malformedCiphertext
        }
        return try run(encrypt: false, iv: iv, input: ciphertext)
    }

    func run(encrypt: Bool, iv: [UInt8], input: [UInt8]) throws(SecretCryptoError) -> [UInt8] {
        try CipherContext(key: key, encrypt: encrypt).run(iv: iv, input: input, encrypt: encrypt)
    }
}

/// An OpenSSL cipher context holding the key schedule; each run sets a new IV only. Its cipher
/// comes from `CipherLibrary`, which keeps its library context while any context is alive.
private final class CipherContext {
    private let context: OpaquePointer

    init(key: SecretBytes, encrypt: Bool) throws(SecretCryptoError) {
        let cipher = try CipherLibrary.acquireAES128CBC()
        guard let context = EVP_CIPHER_CTX_new() else {
            CipherLibrary.release()
            throw .library("EVP_CIPHER_CTX_new")
        }
        self.context = context
        let initialised = key.withUnsafeBytes { keyBytes in
            EVP_CipherInit_ex(context, cipher, nil, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), nil, encrypt ? 1 : 0)
        }
        guard initialised == 1 else { throw .library("EVP_CipherInit_ex") }
    }

    deinit {
        EVP_CIPHER_CTX_free(context)  // frees and cleanses the expanded key schedule
        CipherLibrary.release()
    }

    func run(iv: [UInt8], input: [UInt8], encrypt: Bool) throws(SecretCryptoError) -> [UInt8] {
        guard EVP_CipherInit_ex(context, nil, nil, nil, iv, encrypt ? 1 : 0) == 1 else { throw .library("EVP_CipherInit_ex") }
        var output = [UInt8](repeating: 0, count: input.count + AESCBCCipher.blockSize)
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
