import Foundation
import GRDB
import KeywellProtocol

/// One item of a migration's batch (docs/migration.md, "The state file and importing again").
public struct FreeformImportItem: Sendable {
    public let label: String
    public let attributes: [String: String]
    public let type: String?
    public let secret: ItemSecret
    public let times: ItemDates
    /// An item an earlier import made, deleted in the same transaction if it is still there.
    public let replacing: UUID?

    public init(label: String, attributes: [String: String], type: String?, secret: ItemSecret, times: ItemDates, replacing: UUID?) {
        self.label = label
        self.attributes = attributes
        self.type = type
        self.secret = secret
        self.times = times
        self.replacing = replacing
    }
}

extension KeychainStore {
    /// Every item of one source file in one write transaction: all of them go in (and the items
    /// they replace go), or none does. Items any application may use, as a migration makes them.
    /// Returns the new items' ids, in order.
    func importFreeformItems(_ items: [FreeformImportItem], in keychain: String,
                                    derive: DeriveNative) throws(KeychainError) -> [UUID] {
        guard !items.isEmpty else { return [] }
        let file = try file(at: location(keychain))
        let (key, integrity) = try file.keys()
        let now = Date()
        var deleted: [UUID] = []
        let made = try file.database.write { db -> [UUID] in
            var made: [UUID] = []
            for item in items {
                if let old = item.replacing, let row = try? Self.row(old, db) {
                    try FreeformAttributeTable.deleteAll(itemID: row.rowID, db)
                    try ItemTable.delete(rowID: row.rowID, db)
                    deleted.append(old)
                }
                let new = NewFreeformItem(
                    label: item.label, attributes: item.attributes, type: item.type, secret: item.secret,
                    created: .integer(millisecondsSince1970(item.times.created)), modified: .integer(millisecondsSince1970(item.times.modified)))
                made.append(try Self.insertFreeformItem(new, at: now, file: file, key: key, integrity: integrity, creator: nil,
                                                        creatorUnidentified: false, access: nil, derive: derive, db))
            }
            return made
        }
        file.sessionSecrets.remove(deleted)
        file.markUsed()
        emit(itemChanges: [KeychainItemsEvent(keychain: file.location.displayName, created: made)]
            + (deleted.isEmpty ? [] : [KeychainItemsEvent(keychain: file.location.displayName, deleted: deleted)]))
        return made
    }
}
