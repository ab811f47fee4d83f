import Foundation
import KeywellProtocol

/// A keychain's master key wrapped a second time, under a key that does not come from the
/// password: the login unlock through the TPM keeps its wrapping key sealed in the TPM
/// (docs/login-unlock.md). XChaCha20-Poly1305 like the header's wrapping; the associated data
/// binds it to the keychain's identity, so it opens nothing in another keychain.
public struct SecondWrapping: Sendable, Equatable {
    private static let domain = Data("keywell second wrapping v1\0".utf8)

    /// The identity of the keychain whose master key this is.
    public let keychain: UUID
    /// Nonce ‖ ciphertext ‖ tag.
    public let sealed: Data

    public init(keychain: UUID, sealed: Data) {
        self.keychain = keychain
        self.sealed = Data(sealed)
    }

    /// A fresh random wrapping key (32 bytes).
    public static func randomKey() -> SecretBytes { Sodium.randomKey() }

    public static var keyLength: Int { Sodium.keyLength }

    static func wrapping(_ masterKey: SecretBytes, of keychain: UUID, under key: SecretBytes) -> SecondWrapping {
        let sealed = masterKey.withUnsafeBytes { Sodium.seal($0, key: key, associatedData: associatedData(keychain)) }
        return SecondWrapping(keychain: keychain, sealed: sealed)
    }

    /// The master key, or `errSecAuthFailed` when `key` is not the one it was wrapped under (or
    /// the wrapping was altered).
    func masterKey(under key: SecretBytes) throws(KeychainError) -> SecretBytes {
        guard key.count == Sodium.keyLength, Sodium.openedLength(of: sealed) == Sodium.keyLength else {
            throw KeychainError(SecStatus.authFailed, detail: "the second wrapping of the master key has the wrong length")
        }
        let masterKey = SecretBytes(count: Sodium.keyLength)
        let opened = masterKey.withUnsafeMutableBytes {
            Sodium.open(sealed, key: key, associatedData: Self.associatedData(keychain), into: $0)
        }
        guard opened else { throw KeychainError(SecStatus.authFailed, detail: "the second wrapping does not open with this key") }
        return masterKey
    }

    private static func associatedData(_ keychain: UUID) -> Data {
        domain + Data(keychain.uuidString.lowercased().utf8)
    }
}
