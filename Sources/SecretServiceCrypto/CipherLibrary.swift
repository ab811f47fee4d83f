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
        /// Cipher contexts alive: the library context is freed only when none is.
        var users = 0
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

    /// Frees the library context and all it loaded, unless a cipher context is in use; the next
    /// `acquireAES128CBC()` makes it again. Returns whether it was freed (or there was none).
    @discardableResult
    public static func releaseIfUnused() -> Bool {
        state.withLock { state in
            guard state.users == 0 else { return false }
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
