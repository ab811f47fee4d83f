import Foundation
import GRDB
import KeywellProtocol

/// A keychain's label: the name people see for it (the Secret Service's `Collection.Label`),
/// kept in the keychain file so it travels with it.
///
/// It lives in its own table, `keychain_metadata (name, value)`, row `label`, made the first time
/// a label is set. Files keep format version 1: a file without the table (older files, files
/// never labelled) has no label and shows its name; older Keywell versions read labelled files
/// and ignore the table. The label is not secret (like attributes) and is readable while locked.
extension KeychainStore {
    static let labelMaximumBytes = ServiceLimits.bytesPerKeychainLabel

    /// The label set for the keychain; nil when none was (its name stands for it).
    func keychainLabel(_ nameOrPath: String) throws(KeychainError) -> String? {
        let file = try file(at: location(nameOrPath))
        return try file.database.read { db in try KeychainMetadata.read(KeychainMetadata.label, db) }
    }

    /// Sets the label; as for every change to a keychain, it must be unlocked
    /// (`errSecInteractionNotAllowed`). Any text up to 1 KiB, the empty string included.
    func setKeychainLabel(_ nameOrPath: String, _ label: String) throws(KeychainError) {
        let file = try file(at: location(nameOrPath))
        _ = try file.masterKey()
        try Self.writeLabel(label, in: file)
        file.markUsed()
    }

    static func writeLabel(_ label: String, in file: KeychainFile) throws(KeychainError) {
        guard label.utf8.count <= labelMaximumBytes, !label.utf8.contains(0) else {
            throw .param("a keychain label is at most \(labelMaximumBytes) bytes with no NUL")
        }
        try file.database.write { db in try KeychainMetadata.write(KeychainMetadata.label, label, db) }
    }
}
