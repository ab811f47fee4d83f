/// The keyring file formats Keywell imports (docs/migration.md, "The formats"): named in the
/// migration state file and in the reports the daemon sends and the CLI prints.
public enum KeyringFormat: String, Sendable, Codable {
    /// gnome-keyring's password-encrypted binary file.
    case gnomeKeyring = "gnome-keyring"
    /// gnome-keyring's key-file text, for keyrings with an empty password.
    case gnomeKeyringPlaintext = "gnome-keyring-plaintext"
    /// libsecret's file backend (`keyrings/v1/`), which oo7 also reads and writes.
    case libsecretFile = "libsecret-file"
    /// KWallet's Blowfish wallet file (`kwalletd/NAME.kwl` with `NAME.salt`).
    case kwallet = "kwallet"
}

/// How one keyring's migration ended (a report's `MigrationKey.outcome`).
public enum MigrationOutcome: String, Sendable {
    case imported, unchanged
    /// The keyring's password is not the login password: `keywell migrate` asks for it.
    case needsPassword = "needs-password"
    case wrongPassword = "wrong-password"
    case failed
}

/// The keys of the `a{sv}` dictionaries `MigrateKeyrings` and `GetMigrationStatus` answer with
/// (docs/migration.md, "The native API"), for the daemon that fills them and the CLI that reads them.
public enum MigrationKey {
    public static let keyring = "keyring"
    public static let path = "path"
    public static let keychain = "keychain"
    /// A `KeyringFormat` raw value.
    public static let format = "format"
    /// A `MigrationOutcome` raw value (reports only).
    public static let outcome = "outcome"
    public static let added = "added"
    public static let updated = "updated"
    public static let unchanged = "unchanged"
    public static let message = "message"
    /// Items imported from the source so far (status only).
    public static let items = "items"
    /// Seconds since 1970 (status only).
    public static let firstImported = "first_imported"
    /// Seconds since 1970 (status only).
    public static let lastRun = "last_run"
}
