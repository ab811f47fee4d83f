import Foundation
import GRDB
import KeywellProtocol

/// Secrets of many items for the Secret Service (`GetSecrets`, `GetSecret`), reading no more than
/// opening them takes.
extension KeychainStore {
    /// What `secretServiceSecrets` returns, reading per item only its identity, the primary-key
    /// columns its sealing binds, the sealed secret and its content type: building every
    /// attribute of each row (`SecretServiceRow`) was a quarter of the engine's time for a
    /// thousand items. Rows are fetched 64 to a statement, in one read transaction for more;
    /// secrets are opened after the read. Unknown items are left out; needs the keychain unlocked.
    public func secretServiceSecretBatch(_ ids: [UUID], in keychain: String) throws(KeychainError) -> [UUID: SecretServiceSecret] {
        let file = try file(at: location(keychain))
        let key = try file.masterKey()
        let found = try file.database.read { db -> [SealedRow] in
            guard ids.count > SecretBatchRows.chunk else { return try SecretBatchRows.fetch(ids[...], keychain: file.uuid, db) }
            // One snapshot for the whole batch; BEGIN and COMMIT would cost a short one more than they save.
            var rows: [SealedRow] = []
            try db.inTransaction(.deferred) {
                rows = try SecretBatchRows.fetch(ids[...], keychain: file.uuid, db)
                return .commit
            }
            return rows
        }
        file.markUsed()
        var secrets: [UUID: SecretServiceSecret] = [:]
        secrets.reserveCapacity(found.count)
        for row in found {
            let value = try Sodium.open(row.sealedSecret, key: key, associatedData: row.associatedData)
            secrets[row.uuid] = SecretServiceSecret(value: value, contentType: row.contentType ?? SecretServiceMapping.defaultContentType)
        }
        return secrets
    }
}

/// One item's sealed secret as read, with the associated data its sealing binds.
private struct SealedRow {
    let uuid: UUID
    let associatedData: Data
    let sealedSecret: Data
    let contentType: String?
}

private enum SecretBatchRows {
    /// Items per statement.
    static let chunk = 64

    /// Each class's primary key as (attribute, result column) pairs: after uuid and class come
    /// the key columns of either class (`ItemClass.anyPrimaryKey`), then the secret and the type.
    static let keyColumnsOfClass: [ItemClass: [(ItemAttribute, Int32)]] = Dictionary(uniqueKeysWithValues: ItemClass.allCases.map { itemClass in
        (itemClass, itemClass.primaryKey.map { attribute in (attribute, Int32(2 + ItemClass.anyPrimaryKey.firstIndex(of: attribute)!)) })
    })

    static let secretColumn = Int32(2 + ItemClass.anyPrimaryKey.count)
    static let typeColumn = secretColumn + 1

    /// The statement for every chunk size, built once (statements are cached by their text,
    /// and building it was a fifth of a single GetSecret's read).
    static let chunkSQL = (0...chunk).map(sql(count:))

    static func sql(count: Int) -> String {
        "SELECT item.uuid, item.class, " + ItemClass.anyPrimaryKey.map { "item.\"\($0.name)\"" }.joined(separator: ", ")
            + ", item.secret, type.value FROM item"
            + " LEFT JOIN item_attribute AS type ON type.item_id = item.id AND type.name = ?"
            + " WHERE item.uuid IN (" + Array(repeating: "?", count: count).joined(separator: ", ") + ")"
    }

    /// The items among `ids`: their sealed secrets, what the sealing binds (built from the key
    /// columns in place, without an item and its attribute dictionary), their content types.
    static func fetch(_ ids: ArraySlice<UUID>, keychain: UUID, _ db: Database) throws -> [SealedRow] {
        var found: [SealedRow] = []
        found.reserveCapacity(ids.count)
        var start = ids.startIndex
        while start < ids.endIndex {
            let part = ids[start..<min(ids.endIndex, start + chunk)]
            start = part.endIndex
            let rows = try RawStatement(db, sql: chunkSQL[part.count],
                                        values: [SecretServiceMapping.contentTypeRow.databaseValue] + part.map { $0.data.databaseValue })
            while try rows.step() {
                guard let uuid = rows.uuid(0), let itemClass = ItemClass(rawValue: rows.text(1)),
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
                found.append(SealedRow(uuid: uuid, associatedData: associatedData.finished, sealedSecret: rows.blob(secretColumn),
                                       contentType: rows.isNull(typeColumn) ? nil : rows.text(typeColumn)))
            }
        }
        return found
    }
}
