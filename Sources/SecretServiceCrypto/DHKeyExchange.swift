import COpenSSL
import CSodium
import KeywellSystem

/// The `dh-ietf1024-sha256-aes128-cbc-pkcs7` key agreement of the Secret Service: Diffie-Hellman
/// over RFC 2409's second Oakley group (1024-bit MODP, generator 2), then HKDF-SHA256 with no salt
/// and no info over the shared secret left-padded to 128 bytes, giving a 16-byte AES key. gcr's
/// secret exchange (`sx-aes-1`, spoken with GNOME's system prompter) is the same over RFC 3526's
/// 1536-bit group (docs/prompts.md).
// @unchecked: the OpenSSL keys are immutable after init and only read.
public final class DHKeyExchange: @unchecked Sendable {
    public static let algorithm = "dh-ietf1024-sha256-aes128-cbc-pkcs7"

    /// The MODP group, generator 2.
    public enum Group: Sendable {
        /// RFC 2409's second Oakley group: the Secret Service's.
        case ietf1024
        /// RFC 3526's 1536-bit group: gcr's secret exchange.
        case ike1536

        var bytes: Int { self == .ietf1024 ? 128 : 192 }
    }

    /// The prime's size in bytes: public keys and the shared secret are padded to it.
    let groupBytes: Int
    private let prime: OpaquePointer
    private let privateKey: OpaquePointer
    /// Our public key, unsigned big-endian, padded to the prime's size (peers accept any length).
    public let publicKey: [UInt8]

    public init(group: Group = .ietf1024) throws(SecretCryptoError) {
        // deriveKey keeps the shared secret in sodium_malloc'd memory, which aborts before sodium_init.
        guard sodium_init() >= 0 else { throw .library("sodium_init") }
        let loaded = group == .ietf1024 ? BN_get_rfc2409_prime_1024(nil) : BN_get_rfc3526_prime_1536(nil)
        guard let prime = loaded else { throw .library("BN_get_rfc prime") }
        guard let privateKey = BN_secure_new() else { BN_free(prime); throw .library("BN_secure_new") }
        groupBytes = group.bytes
        do {
            publicKey = try Self.makeKeyPair(prime: prime, privateKey: privateKey, groupBytes: group.bytes)
        } catch {
            BN_clear_free(privateKey)
            BN_free(prime)
            throw error
        }
        self.prime = prime
        self.privateKey = privateKey
    }

    /// Fills `privateKey` with an exponent uniformly in [2, p-2] and returns 2^x mod p, padded.
    /// The exponent's bytes come from libsodium (the kernel's getrandom), drawn again while out
    /// of range: both primes start with 64 one bits, so a draw is kept but for a chance of 2⁻⁶³.
    /// OpenSSL's random generator would load its providers and error strings into the default
    /// context for good (`CipherLibrary`).
    private static func makeKeyPair(prime: OpaquePointer, privateKey: OpaquePointer, groupBytes: Int) throws(SecretCryptoError) -> [UInt8] {
        guard let upper = BN_dup(prime), let lower = BN_new(), let generator = BN_new(), let publicNumber = BN_new(),
              let context = BN_CTX_secure_new()
        else { throw .library("BN_new") }
        defer { BN_free(upper); BN_free(lower); BN_free(generator); BN_free(publicNumber); BN_CTX_free(context) }
        guard BN_sub_word(upper, 2) == 1, BN_set_word(lower, 2) == 1, BN_set_word(generator, 2) == 1 else {
            throw .library("BN_set_word")
        }
        // Zeroed when freed (SecretBytes), as the two below.
        let drawn = SecretBytes(count: groupBytes)
        repeat {
            let read = drawn.withUnsafeMutableBytes { bytes in
                randombytes_buf(bytes.baseAddress!, bytes.count)
                return BN_bin2bn(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(bytes.count), privateKey)
            }
            guard read != nil else { throw .library("BN_bin2bn") }
        } while BN_cmp(privateKey, lower) < 0 || BN_cmp(privateKey, upper) > 0
        // The exponent is secret: the constant-time ladder.
        BN_set_flags(privateKey, BN_FLG_CONSTTIME)
        guard BN_mod_exp(publicNumber, generator, privateKey, prime, context) == 1 else { throw .library("BN_mod_exp") }
        var bytes = [UInt8](repeating: 0, count: groupBytes)
        _ = BN_bn2binpad(publicNumber, &bytes, Int32(groupBytes))
        return bytes
    }

    deinit {
        BN_clear_free(privateKey)
        BN_free(prime)
    }

    /// Derives the session's AES-128 key from the client's public key (unsigned big-endian, any
    /// length up to the prime's size: libsecret sends it unpadded, secretstorage padded).
    public func deriveKey(peerPublicKey: [UInt8]) throws(SecretCryptoError) -> SecretBytes {
        let significant = peerPublicKey.drop(while: { $0 == 0 })
        guard !significant.isEmpty, significant.count <= groupBytes else { throw .invalidPublicKey }
        guard let peer = BN_bin2bn(Array(significant), Int32(significant.count), nil),
              let shared = BN_secure_new(), let limit = BN_dup(prime), let context = BN_CTX_secure_new()
        else { throw .library("BN_new") }
        defer { BN_free(peer); BN_clear_free(shared); BN_free(limit); BN_CTX_free(context) }
        // Reject 0, 1 and p-1 (and anything ≥ p): they force a known shared secret.
        BN_sub_word(limit, 1)
        guard BN_cmp(peer, BN_value_one()) > 0, BN_cmp(peer, limit) < 0 else { throw .invalidPublicKey }
        guard BN_mod_exp(shared, peer, privateKey, prime, context) == 1 else { throw .library("BN_mod_exp") }

        let sharedBytes = SecretBytes(count: groupBytes)
        sharedBytes.withUnsafeMutableBytes { _ = BN_bn2binpad(shared, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(groupBytes)) }
        return try sharedBytes.withUnsafeBytes { (raw) throws(SecretCryptoError) in try hkdfSHA256(inputKey: raw, length: 16) }
    }
}

/// RFC 5869 HKDF with SHA-256, an absent salt (treated as zeros) and empty info: OpenSSL's,
/// fetched in `CipherLibrary`'s context so that what it loads goes when that context is freed.
func hkdfSHA256(inputKey: UnsafeRawBufferPointer, length: Int) throws(SecretCryptoError) -> SecretBytes {
    try CipherLibrary.withContext { library throws(SecretCryptoError) -> SecretBytes in
        guard let kdf = EVP_KDF_fetch(library, "HKDF", nil) else { throw .library("EVP_KDF_fetch(HKDF)") }
        defer { EVP_KDF_free(kdf) }
        guard let context = EVP_KDF_CTX_new(kdf) else { throw .library("EVP_KDF_CTX_new") }
        defer { EVP_KDF_CTX_free(context) }  // cleanses the key it copied
        let key = SecretBytes(count: length)
        // OSSL_PARAM keeps the pointers it is given: static strings, not a String's temporary copy.
        var parameters = [
            OSSL_PARAM_construct_utf8_string(cString("digest"), UnsafeMutablePointer(mutating: cString("SHA256")), 0),
            OSSL_PARAM_construct_octet_string(cString("key"), UnsafeMutableRawPointer(mutating: inputKey.baseAddress), inputKey.count),
            OSSL_PARAM_construct_end(),
        ]
        let derived = key.withUnsafeMutableBytes {
            EVP_KDF_derive(context, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), length, &parameters)
        }
        guard derived == 1 else { throw .library("HKDF derive") }
        return key
    }
}

private func cString(_ text: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}
