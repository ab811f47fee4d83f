import Foundation
import GRDB
import KeywellProtocol

/// Secrets of many items at once (the Secret Service's `GetSecrets`, `GetSecret`), reading no
/// more than opening them takes.
extension KeychainStore {
    /// What `secrets(of:in:)` returns, reading per item only what opening its secret and
    /// checking its MAC take: one statement per 64 items gives each item's row and its free-form
    /// rows (`ItemIntegrity.read`), the primary-key columns its sealing binds are read in place
    /// (building every attribute of each row, `ItemSummaryRow`, was a quarter of the engine's
    /// time for a thousand items), and secrets are opened after the read, once every MAC checked.
    /// Unknown items are left out; a tampered one fails the call (`errSecDecode`); needs the
    /// keychain unlocked.
    func secretBatch(of ids: [UUID], in keychain: String) throws(KeychainError) -> [UUID: ItemSecret] {
        let file = try file(at: location(keychain))
        let (key, integrity) = try file.keys()
        let read = { (db: Database) throws -> [ItemIntegrity.Row<SealedSecret>] in
            try SecretBatchRows.fetch(ids[...], keychain: file.uuid, db)
        }
        // One statement is one snapshot already; a batch of several needs a transaction.
        let found = try ids.count > ItemIntegrity.chunk ? file.database.snapshot(read) : file.database.read(read)
        file.markUsed()
        for row in found { try row.check(integrity) }
        var secrets: [UUID: ItemSecret] = [:]
        secrets.reserveCapacity(found.count)
        for row in found {
            guard let uuid = row.uuid else { continue }
            let value = try Sodium.open(row.extra.sealed, key: key, associatedData: row.extra.associatedData)
            let contentType = row.freeformValue(FreeformItem.contentTypeRow) ?? FreeformItem.defaultContentType
            secrets[uuid] = ItemSecret(value: value, contentType: contentType)
        }
        return secrets
    }
}

/// One item's sealed secret as read, with the associated data its sealing binds.
struct SealedSecret {
    let associatedData: Data
    let sealed: Data
}

enum SecretBatchRows {
    /// Each class's primary key as (attribute, result column) pairs, among the columns
    /// `ItemIntegrity.read` returns.
    static let keyColumnsOfClass: [ItemClass: [(ItemAttribute, Int32)]] = Dictionary(uniqueKeysWithValues: ItemClass.allCases.map { itemClass in
        (itemClass, itemClass.primaryKey.map { attribute in
            let index = ItemIntegrity.coveredColumns.firstIndex(of: "\"\(attribute.name)\"")!
            return (attribute, ItemIntegrity.firstCoveredColumn + Int32(index))
        })
    })
    static let classColumn = ItemIntegrity.firstCoveredColumn + Int32(ItemIntegrity.coveredColumns.firstIndex(of: "class")!)
    static let secretColumn = ItemIntegrity.firstExtraColumn

    /// The items among `ids`, `ItemIntegrity.chunk` to a statement.
    static func fetch(_ ids: ArraySlice<UUID>, keychain: UUID, _ db: Database) throws -> [ItemIntegrity.Row<SealedSecret>] {
        var found: [ItemIntegrity.Row<SealedSecret>] = []
        found.reserveCapacity(ids.count)
        var start = ids.startIndex
        while start < ids.endIndex {
            let part = ids[start..<min(ids.endIndex, start + ItemIntegrity.chunk)]
            start = part.endIndex
            found += try ItemIntegrity.read(.secrets, part.map { $0.data.databaseValue }, keychain: keychain, db) { rows in
                try sealedSecret(rows, keychain: keychain)
            }
        }
        return found
    }

    /// The sealed secret and what its sealing binds, built from the key columns in place.
    static func sealedSecret(_ rows: RawStatement, keychain: UUID) throws -> SealedSecret {
        guard let uuid = rows.uuid(ItemIntegrity.firstCoveredColumn), let itemClass = ItemClass(rawValue: rows.text(classColumn)),
              let columns = keyColumnsOfClass[itemClass]
        else { throw KeychainError(SecStatus.invalidKeychain, detail: "an item row is damaged") }
        // As `ItemSealing.associatedData` builds it from an item: a missing part is "" or 0.
        var associatedData = AssociatedData(keychain: keychain, item: uuid, itemClass: itemClass)
        for (attribute, column) in columns {
            if attribute.kind == .integer {
                associatedData.appendInteger(attribute, rows.isNull(column) ? 0 : rows.integer(column))
            } else if rows.isNull(column) {
                associatedData.appendBytes(attribute, UnsafeRawBufferPointer(start: nil, count: 0))
            } else {
                rows.withBytes(column) { associatedData.appendBytes(attribute, $0) }
            }
        }
        return SealedSecret(associatedData: associatedData.finished, sealed: rows.blob(secretColumn))
    }
}
