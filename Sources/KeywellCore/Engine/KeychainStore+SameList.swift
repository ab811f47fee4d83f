import Foundation
import GRDB
import GRDBSQLite
import KeywellProtocol

/// What one answer to an access question covers besides the items asked about
/// (docs/access-control.md, "One answer per program and list"): the other items of the same
/// keychain whose list is exactly an asked item's, the items the same program saved and trusts.
extension KeychainStore {
    /// Distinct lists of the asked items looked at per keychain; an answer about more (an
    /// export of a whole keychain) covers the items of the first ones only.
    static let sameListListsLooked = 64

    /// The items of `items`' keychains, not among `items`, whose stored list is the same text as
    /// one of theirs, labelled and with their lists, at most `limit`. Lists open to any
    /// application or trusting no program have no companions; nor do items of a keychain that is
    /// gone or whose reference names another file (the Secret Service's session collection).
    /// Read unchecked, as `accessLists` is: a list edited on disk fails the MAC check of every
    /// read that would hand out its secret. Errors give no companions: the items are asked
    /// about when used, as before.
    public func itemsSharingList(with items: [AccessItem], limit: Int) -> [AccessItem] {
        var result: [AccessItem] = []
        var byKeychain: [String: [PersistentRef]] = [:]
        var order: [String] = []
        for item in items where !item.keychain.isEmpty {
            guard let reference = try? PersistentRef(parsing: Data(item.reference)) else { continue }
            if byKeychain[item.keychain] == nil { order.append(item.keychain) }
            byKeychain[item.keychain, default: []].append(reference)
        }
        for keychain in order where result.count < limit {
            guard let asked = byKeychain[keychain],
                  let found = try? sameListItems(in: keychain, of: asked, limit: limit - result.count) else { continue }
            result += found
        }
        return result
    }

    private func sameListItems(in keychain: String, of references: [PersistentRef], limit: Int) throws -> [AccessItem] {
        guard let file = try existingFile(at: location(keychain)) else { return [] }
        let asked = references.filter { $0.keychain == file.uuid }.map(\.item)
        guard !asked.isEmpty else { return [] }
        let labelColumn = "\"\(ItemAttribute.label.name)\""
        return try file.database.read { db -> [AccessItem] in
            guard try ItemAccessColumn.hasColumn(db) else { return [] }
            // The asked items' lists, the empty one (no program) left out.
            var texts: [String] = []
            try ChunkedLookup.forEachRow(of: asked.map(\.data.databaseValue), db,
                                           selectIn: "SELECT DISTINCT access FROM item WHERE access IS NOT NULL AND access != '' AND uuid IN") { rows in
                guard rows.storageType(0) == SQLITE_TEXT else { return }
                let text = rows.text(0)
                if texts.count < Self.sameListListsLooked, !texts.contains(text) { texts.append(text) }
            }
            let skipped = Set(asked)
            var found: [AccessItem] = []
            for text in texts where found.count < limit {
                let trusted = ItemAccessColumn.identities(in: text)
                // `asked.count` more: the asked items match too and are skipped.
                let rows = try RawStatement(db, sql: "SELECT uuid, \(labelColumn) FROM item WHERE access = ? ORDER BY id LIMIT ?",
                                            values: [text.databaseValue, (limit - found.count + skipped.count).databaseValue])
                defer { rows.finish() }
                while found.count < limit, try rows.step() {
                    guard let uuid = rows.uuid(0), !skipped.contains(uuid) else { continue }
                    let label = rows.isNull(1) ? "" : rows.text(1)
                    found.append(AccessItem(keychain: file.location.path, reference: Array(PersistentRef(keychain: file.uuid, item: uuid).data),
                                            label: label, trusted: trusted))
                }
            }
            return found
        }
    }
}
