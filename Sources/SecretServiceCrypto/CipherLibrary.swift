import COpenSSL
import KeywellSystem

/// OpenSSL's state for the sessions' AES, in a library context of its own that the daemon frees
/// when it goes idle or a keychain locks (`releaseIfUnused`).
///
/// The first fetch of a cipher loads OpenSSL's default provider: its algorithm tables and name
/// map, about 180 KiB of heap that the process's default context would keep for good, so that a
/// daemon that once served a DH session stayed that much bigger after the lock. In a context of
/// our own they go with it, and the next DH session makes them again (docs/performance.md,
/// "The daemon"). A session's HKDF runs in the same context; its random numbers come from
/// libsodium, so the default context is never loaded for a session.
public enum CipherLibrary {
    private struct State {
        var context: OpaquePointer?
        var cipher: OpaquePointer?
        /// Cipher contexts in use: the library context is freed only when none is.
        var users = 0
        /// Sealing contexts kept between seals, by the cipher that owns each (`AESCBCCipher`):
        /// freed with the library context, or when their cipher goes.
        var kept: [ObjectIdentifier: UInt] = [:]  // the contexts' addresses
    }

    private static let state = Protected(State())

    /// AES-128-CBC from the library context, made first if needed; `release()` once done with it.
    static func acquireAES128CBC() throws(SecretCryptoError) -> OpaquePointer {
        try state.withLock { state throws(SecretCryptoError) -> OpaquePointer in
            if state.cipher == nil {
                if state.context == nil {
                    guard let context = OSSL_LIB_CTX_new() else { throw .library("OSSL_LIB_CTX_new") }
                    state.context = context
                }
                guard let cipher = EVP_CIPHER_fetch(state.context, "AES-128-CBC", nil) else {
                    throw .library("EVP_CIPHER_fetch(AES-128-CBC)")
                }
                state.cipher = cipher
            }
            state.users += 1
            return state.cipher!
        }
    }

    /// Runs `body` with the library context, made first if needed, kept while `body` runs.
    static func withContext<T>(_ body: (OpaquePointer) throws(SecretCryptoError) -> T) throws(SecretCryptoError) -> T {
        let context = try state.withLock { state throws(SecretCryptoError) -> OpaquePointer in
            if state.context == nil {
                guard let context = OSSL_LIB_CTX_new() else { throw .library("OSSL_LIB_CTX_new") }
                state.context = context
            }
            state.users += 1
            return state.context!
        }
        defer { release() }
        return try body(context)
    }

    /// A cipher context made from `acquireAES128CBC()`'s cipher has been freed.
    static func release() {
        state.withLock { $0.users -= 1 }
    }

    /// `owner`'s kept context, now counted as in use; nil when it has none (not made yet, or
    /// freed with the library context).
    static func takeKept(_ owner: ObjectIdentifier) -> OpaquePointer? {
        state.withLock { state in
            guard let address = state.kept.removeValue(forKey: owner) else { return nil }
            state.users += 1
            return OpaquePointer(bitPattern: address)
        }
    }

    /// A context done with a seal, kept for `owner`'s next one (at most one each).
    static func giveBack(_ context: OpaquePointer, to owner: ObjectIdentifier) {
        state.withLock { state in
            state.users -= 1
            if state.kept[owner] == nil {
                state.kept[owner] = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(context)))
            } else {
                EVP_CIPHER_CTX_free(context)
            }
        }
    }

    /// `owner` is gone: its kept context (and key schedule) is freed.
    static func dropKept(_ owner: ObjectIdentifier) {
        state.withLock { state in
            if let address = state.kept.removeValue(forKey: owner) { EVP_CIPHER_CTX_free(OpaquePointer(bitPattern: address)) }
        }
    }

    /// Frees the library context and all it loaded, unless a cipher context is in use; the next
    /// `acquireAES128CBC()` makes it again. Returns whether it was freed (or there was none).
    @discardableResult
    public static func releaseIfUnused() -> Bool {
        state.withLock { state in
            guard state.users == 0 else { return false }
            // Kept contexts hold the provider's state: they go first (each cleanses its key schedule).
            for address in state.kept.values { EVP_CIPHER_CTX_free(OpaquePointer(bitPattern: address)) }
            state.kept.removeAll()
            if let cipher = state.cipher { EVP_CIPHER_free(cipher) }
            if let context = state.context { OSSL_LIB_CTX_free(context) }
            state.cipher = nil
            state.context = nil
            return true
        }
    }

    /// Whether the library context exists (tests).
    static var isLoaded: Bool { state.withLock { $0.context != nil } }
}
