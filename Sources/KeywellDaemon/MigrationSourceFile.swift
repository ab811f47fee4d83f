import Foundation
import KeyringImport
import KeywellCore
import KeywellProtocol

/// One file the migration reads (docs/migration.md, "What is imported, and where"): a keyring
/// of gnome-keyring or libsecret, or a KWallet wallet, with the keychain it goes into and how it
/// is opened.
struct SourceFile: Sendable {
    let name: String
    let path: String
    /// The format the file's first bytes say, if one Keywell reads.
    let format: @Sendable ([UInt8]) -> KeyringFormat?
    /// The keychain for a file of that format.
    let keychain: @Sendable (KeyringFormat?) -> String
    /// Opens the file's bytes with the password; the Int64 is the file's modified time (seconds);
    /// the Bool says whether a program that may ask the user (gpg for a GPG wallet) may run now.
    let open: @Sendable ([UInt8], SecretBytes?, Int64, Bool) throws(KeyringReadError) -> KeyringContents

    init(keyring source: KeyringFolder.Source) {
        name = source.name
        path = source.path
        format = { KeyringFolder.format(of: $0) }
        keychain = { KeyringMigration.keychain(for: source, format: $0) }
        open = { bytes, password, _, _ throws(KeyringReadError) in
            try KeyringFolder.open(bytes, keyring: source.name, password: password)
        }
    }

    /// `kdewallet`, the wallet KDE opens by default, goes into the default keychain; any
    /// other wallet into the keychain of its name.
    init(wallet source: KWalletFolder.Source, defaultKeychain: @escaping @Sendable () -> String?) {
        name = source.name
        path = source.path
        format = { KWalletFile.matches($0) ? .kwallet : nil }
        keychain = { _ in
            source.name == KWalletFolder.defaultWallet ? defaultKeychain() ?? KeywellNames.loginKeychain : source.name
        }
        open = { bytes, password, modified, mayAsk throws(KeyringReadError) in
            let gpg = mayAsk ? KWalletGPG(environment: ProcessInfo.processInfo.environment) : nil
            return try KWalletFolder.open(bytes, source: source, password: password, modified: modified, gpg: gpg)
        }
    }
}
