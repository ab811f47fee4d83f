import KeywellProtocol

/// How the login keychain's password relates to the login password (docs/login-unlock.md,
/// "When the keychain's password is not the login password"). Kept in the keychain file
/// (`keychain_metadata`), not secret, readable while locked; a file without the row follows the
/// login password.
public enum LoginPasswordLink: String, Sendable {
    /// Logins unlock it; a login password that does not open it (root reset it) is put right at
    /// the user's next unlock, silently, as before.
    case follows
    /// Its password was changed on purpose (Seahorse, `set-keychain-password`): a login whose
    /// password does not open it asks the user before anything is re-wrapped.
    case changedOnPurpose = "changed"
    /// The user answered "Keep Separate": logins neither ask nor re-wrap.
    case separate

    /// `follows` is the absence of the row.
    var storedValue: String? { self == .follows ? nil : rawValue }
}

extension KeychainStore {
    /// Works while locked. Any keychain may be asked; only `login`'s link is ever set.
    func loginPasswordLink(_ nameOrPath: String) throws(KeychainError) -> LoginPasswordLink {
        let file = try file(at: location(nameOrPath))
        let value = try file.database.read { db in try KeychainMetadata.read(KeychainMetadata.loginPasswordLink, db) }
        // An unknown value (a newer Keywell, an edit) asks rather than re-wraps.
        return value.map { LoginPasswordLink(rawValue: $0) ?? .changedOnPurpose } ?? .follows
    }

    /// Works while locked (the link is not secret, and a login must record the answer whatever
    /// the lock state).
    func setLoginPasswordLink(_ nameOrPath: String, _ link: LoginPasswordLink) throws(KeychainError) {
        let file = try file(at: location(nameOrPath))
        guard try loginPasswordLink(nameOrPath) != link else { return }
        try file.database.write { db in try KeychainMetadata.write(KeychainMetadata.loginPasswordLink, link.storedValue, db) }
    }

    /// Works while locked and leaves the lock state as it was. A wrong old password is
    /// `errSecAuthFailed` and changes nothing. A change of the login keychain's password records
    /// whether the login made it (`byLogin`: PAM's password change, or the update the user agreed
    /// to) or the user chose it (every other caller): `LoginPasswordLink`.
    func changePassword(_ nameOrPath: String, old: SecretBytes, new: SecretBytes, byLogin: Bool = false) throws(KeychainError) {
        let location = try location(nameOrPath)
        let link: LoginPasswordLink? = location == loginLocation ? (byLogin ? .follows : .changedOnPurpose) : nil
        try file(at: location).changePassword(old: old, new: new, kdf: kdf, link: link)
    }

    /// Whether the Secret Service made this keychain for a client's first store, before `login`
    /// existed (docs/secret-service.md, "First store"). Works while locked.
    func isFirstStoreKeychain(_ nameOrPath: String) throws(KeychainError) -> Bool {
        let file = try file(at: location(nameOrPath))
        return try file.database.read { db in try KeychainMetadata.read(KeychainMetadata.madeFor, db) } == KeychainMetadata.firstStore
    }

    func markFirstStoreKeychain(_ nameOrPath: String) throws(KeychainError) {
        let file = try file(at: location(nameOrPath))
        try file.database.write { db in try KeychainMetadata.write(KeychainMetadata.madeFor, KeychainMetadata.firstStore, db) }
    }
}
