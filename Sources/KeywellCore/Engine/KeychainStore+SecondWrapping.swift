import Foundation
import KeywellProtocol

/// A keychain opened by a key other than its password (docs/login-unlock.md): its master key
/// wrapped a second time while it is unlocked, and an unlock from that wrapping.
extension KeychainStore {
    /// The master key of the unlocked keychain wrapped under `key`; `errSecInteractionNotAllowed`
    /// while locked.
    func secondWrapping(_ nameOrPath: String, under key: SecretBytes) throws(KeychainError) -> SecondWrapping {
        let file = try file(at: location(nameOrPath))
        return SecondWrapping.wrapping(try file.masterKey(), of: file.uuid, under: key)
    }

    /// Unlocks with the master key that `wrapping` holds under `key`. The wrapping must belong to
    /// this keychain and the key it gives must pass the header's integrity check, so a wrapping
    /// from another keychain, or an older copy of this one, opens nothing (`errSecAuthFailed`).
    func unlock(_ nameOrPath: String, wrapping: SecondWrapping, key: SecretBytes) throws(KeychainError) {
        let file = try file(at: location(nameOrPath))
        guard wrapping.keychain == file.uuid else {
            throw KeychainError(SecStatus.authFailed, detail: "the second wrapping belongs to another keychain")
        }
        if try file.unlock(masterKey: wrapping.masterKey(under: key)) {
            file.keepSessionCopies(logger: logger)
            emit([.unlocked(file.location.displayName)])
        }
    }
}
