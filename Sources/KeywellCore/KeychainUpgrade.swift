import Foundation
import GRDB
import KeywellProtocol

/// Upgrades a keychain file of format 1 (no integrity MACs) to the current format, the first
/// time its master key is at hand (an unlock or a password change): in one transaction it adds
/// the MAC columns, computes every item's MAC from what the file holds, and wraps the master key
/// again under the same password-derived key with the new format version in its associated
/// data, so the file can never be passed off as format 1 again (docs/file-format.md).
enum KeychainUpgrade {
    static func upgradeIfNeeded(
        _ database: KeychainDatabase, from header: KeychainHeader, masterKey: SecretBytes, wrappingKey: SecretBytes
    ) throws(KeychainError) {
        guard header.formatVersion < KeychainHeader.firstVersionWithMACs else { return }
        let path = database.path
        try database.write { db throws in
            let current = try KeychainDatabase.readHeader(db, path: path)
            // Upgraded by another process, or its password changed meanwhile: the caller reads it again.
            guard current.formatVersion < KeychainHeader.firstVersionWithMACs, current.salt == header.salt,
                  current.wrappedKey == header.wrappedKey
            else { return }
            let itemColumns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info('item')")
            guard !itemColumns.contains("mac") else {
                // Only a hand-made file can be format 1 with the columns of format 2.
                throw KeychainError(SecStatus.invalidKeychain, detail: "\(path) claims format 1 but has integrity columns")
            }
            for statement in KeychainSchema.addedInVersion2 { try db.execute(sql: statement) }
            try ItemIntegrity.renewAll(keychain: current.uuid, key: IntegrityKey(masterKey: masterKey), db)
            let upgraded = KeychainHeader.wrapping(
                masterKey, under: wrappingKey, uuid: current.uuid, kdf: current.kdf, salt: current.salt,
                settings: current.settings)
            try KeychainDatabase.writeHeader(upgraded, db)
        }
    }
}
