import Foundation
import KeywellProtocol

/// Keychain management under the names the faces call: the work is the registry's
/// (`OpenKeychains+Keychains.swift`); lock state and settings are in `KeychainStore+LockState.swift`.
extension KeychainStore {
    /// A new keychain, unlocked, not added to the search list, with `label` if given (see
    /// `keychainLabel`). Returns its absolute path.
    func createKeychain(_ nameOrPath: String, password: SecretBytes, label: String? = nil) throws(KeychainError) -> String {
        try keychains.createKeychain(nameOrPath, password: password, label: label)
    }

    /// Deletes the file; drops the keychain from the search list and, if it was the default,
    /// leaves no default.
    func deleteKeychain(_ nameOrPath: String) throws(KeychainError) {
        try keychains.deleteKeychain(nameOrPath)
    }

    /// Every keychain the user has: the folder's, then path-addressed ones from the settings.
    func listKeychains() throws(KeychainError) -> [String] {
        try keychains.listKeychains()
    }

    func searchList() throws(KeychainError) -> [String] {
        try keychains.searchList()
    }

    /// Keychains need not exist yet (searches skip missing ones); repeats are dropped.
    func setSearchList(_ list: [String]) throws(KeychainError) {
        try keychains.setSearchList(list)
    }

    func defaultKeychain() throws(KeychainError) -> String {
        try keychains.defaultKeychain()
    }

    /// The keychain must exist.
    func setDefaultKeychain(_ nameOrPath: String) throws(KeychainError) {
        try keychains.setDefaultKeychain(nameOrPath)
    }

    func loginKeychain() throws(KeychainError) -> String {
        try keychains.loginKeychain()
    }

    /// Runs a create, delete or restore alone, then sends the events for what it changed
    /// (`OpenKeychains.administering`).
    func administering<T: Sendable>(
        _ change: (inout [KeychainLifecycleEvent]) throws(KeychainError) -> T
    ) throws(KeychainError) -> T {
        try keychains.administering(change)
    }
}
