import Foundation
import GRDB
import KeywellProtocol

/// Upgrades a keychain file of an older format to the current one, the first time its master
/// key is at hand (an unlock or a password change), in one transaction (docs/file-format.md):
/// - from format 1 (no integrity MACs): adds the MAC columns and computes every item's MAC from
///   what the file holds;
/// - from format 2 (no access lists): checks the header's MAC first (the new one must not vouch
///   for settings edited on disk), then adds the access column (every item "any application",
///   which leaves item MACs as they were) and `enforceAccess`, off.
/// Then it wraps the master key again under the same password-derived key with the new format
/// version in its associated data, so the file can never be passed off as older again.
enum KeychainUpgrade {
    static func upgradeIfNeeded(
        _ database: KeychainDatabase, from header: KeychainHeader, masterKey: SecretBytes, wrappingKey: SecretBytes
    ) throws(KeychainError) {
        guard header.formatVersion < KeychainHeader.currentFormatVersion else { return }
        let path = database.path
        let integrity = IntegrityKey(masterKey: masterKey)
        try database.write { db throws in
            let current = try KeychainDatabase.readHeader(db, path: path)
            // Upgraded by another process, or its password changed meanwhile: the caller reads it again.
            guard current.formatVersion < KeychainHeader.currentFormatVersion, current.salt == header.salt,
                  current.wrappedKey == header.wrappedKey
            else { return }
            let itemColumns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info('item')")
            // Only a hand-made file can claim a format without having its columns, or the reverse.
            let expectsMAC = current.formatVersion >= KeychainHeader.firstVersionWithMACs
            guard itemColumns.contains("mac") == expectsMAC, !itemColumns.contains("access") else {
                throw KeychainError(
                    SecStatus.invalidKeychain, detail: "\(path) claims format \(current.formatVersion) but has other columns")
            }
            if expectsMAC {
                try current.checkMAC(integrity, path: path)
            } else {
                for column in KeychainSchema.addedInVersion2 { try db.execute(sql: column.alterStatement) }
            }
            for column in KeychainSchema.addedInVersion3 { try db.execute(sql: column.alterStatement) }
            if !expectsMAC {
                try ItemIntegrity.renewAll(keychain: current.uuid, key: integrity, db)
            }
            var settings = current.settings
            settings.enforceAccess = false
            let upgraded = KeychainHeader.wrapping(
                masterKey, under: wrappingKey, uuid: current.uuid, kdf: current.kdf, salt: current.salt,
                settings: settings)
            try KeychainDatabase.writeHeader(upgraded, db)
        }
    }
}
