import Foundation
import GRDB
import GRDBSQLite
import KeywellProtocol
import KeywellSystem

/// The MAC that binds an item's attributes to it (docs/file-format.md, "Integrity MACs"): keyed
/// BLAKE2b under the keychain's `IntegrityKey` over the keychain's identity, the item's uuid and
/// class, every attribute column and match column of its row, its access list unless that is "any
/// application" (so an item's MAC from before access lists still holds), and every free-form row
/// (Secret Service attributes, content type, type). Stored in `item.mac`.
///
/// Written by every change of an item; checked whenever an item is returned while its keychain is
/// unlocked, and before an item is changed (a change must never bless an edit made on disk).
/// Reads while locked return attributes unchecked, as on macOS: nothing can check them then.
enum ItemIntegrity {
    private static let domain = "keywell item attributes v1"

    /// The item columns covered, in order, as read by `select`.
    static let coveredColumns = ["uuid", "class"] + ItemTable.attributeAndMatchColumns

    /// The MAC of an item about to be written with these free-form rows. `values`: the item's
    /// `ItemTable.attributeAndMatchValues`, when the caller built them already for its insert.
    static func mac(
        for item: KeychainItem, values: [DatabaseValue]? = nil, freeform: [String: String], access: AccessList, keychain: UUID,
        key: IntegrityKey
    ) -> Data {
        var input = MACInput(domain: domain, keychain: keychain)
        input.append(item.uuid.data.databaseValue)
        input.append(item.itemClass.rawValue.databaseValue)
        for value in values ?? ItemTable.attributeAndMatchValues(item) { input.append(value) }
        // A list is text, never NULL, and the free-form rows start with their count (an integer):
        // the input with a list cannot be mistaken for one without.
        if access != .anyApplication { input.append(access.databaseValue) }
        input.appendFreeform(freeform.map { (Array($0.key.utf8), Array($0.value.utf8)) })
        return key.mac(input)
    }

    /// Checks the items at `rowIDs` (one statement per 64): `errSecDecode` naming the first whose
    /// row or free-form rows differ from what its MAC covers, or that has no MAC.
    /// Returns the access lists the check read, by row id (items trusting any application are
    /// absent); `readingLists` false: none (the MAC still covers them), for a caller that does not
    /// judge access, so that it does not pay for splitting every list (docs/performance.md).
    @discardableResult
    static func check(rowIDs: [Int64], keychain: UUID, key: IntegrityKey, _ db: Database, readingLists: Bool = true) throws -> [Int64: AccessList] {
        var lists: [Int64: AccessList] = [:]
        for item in try read(.check, rowIDs.map { $0.databaseValue }, keychain: keychain, db, extra: { _ in () }) {
            try item.check(key)
            // Only after the MAC: a list edited on disk is a MAC failure first, not a damaged list.
            // The MAC vouches that Keywell wrote the text, and Keywell validates every list it
            // writes, so it is split here without validating it again (a trusted read pays this).
            switch item.access {
            case .anyApplication:
                break
            case .text(let text):
                if readingLists { lists[item.rowID] = .applications(ItemAccessColumn.identities(in: text)) }
            case .notText:
                throw KeychainError(SecStatus.invalidKeychain, detail: "item row \(item.rowID) has a damaged access list")
            }
        }
        return lists
    }

    /// `check` for fetched items, one statement per 64 (SQLite's errors as `KeychainError`s of
    /// `path`). Returns the access lists it read, checked by the same MAC, by row id (none
    /// without `readingLists`).
    @discardableResult
    static func check(
        _ items: [KeychainItem], keychain: UUID, key: IntegrityKey, path: String, _ db: Database, readingLists: Bool = true
    ) throws(KeychainError) -> [Int64: AccessList] {
        let ids = items.compactMap(\.rowID)
        return try KeychainError.rethrowing(path: path) {
            var lists: [Int64: AccessList] = [:]
            for start in stride(from: 0, to: ids.count, by: chunk) {
                let part = try check(rowIDs: Array(ids[start..<min(ids.count, start + chunk)]), keychain: keychain, key: key, db,
                                     readingLists: readingLists)
                lists.merge(part) { first, _ in first }
            }
            return lists
        }
    }

    /// Computes and stores the MAC of the item at `rowID` from what its rows now hold: after a
    /// change, once `check` passed on the item as it was.
    static func renew(rowID: Int64, keychain: UUID, key: IntegrityKey, _ db: Database) throws {
        for item in try read(.check, [rowID.databaseValue], keychain: keychain, db, extra: { _ in () }) {
            try store(key.mac(item.input), rowID: item.rowID, db)
        }
    }

    /// Computes and stores every item's MAC (the upgrade of a file written before MACs existed).
    static func renewAll(keychain: UUID, key: IntegrityKey, _ db: Database) throws {
        let ids = try Int64.fetchAll(db, sql: "SELECT id FROM item")
        for start in stride(from: 0, to: ids.count, by: chunk) {
            let part = ids[start..<min(ids.count, start + chunk)]
            for item in try read(.check, part.map { $0.databaseValue }, keychain: keychain, db, extra: { _ in () }) {
                try store(key.mac(item.input), rowID: item.rowID, db)
            }
        }
    }

    private static func store(_ mac: Data, rowID: Int64, _ db: Database) throws {
        try RawStatement(db, sql: "UPDATE item SET mac = ? WHERE id = ?", values: [mac.databaseValue, rowID.databaseValue]).run()
        try UnexpectedChangeCount.check(db, "storing the MAC of item row \(rowID)")
    }

    // MARK: Reading rows with what their MAC covers

    /// Items per statement.
    static let chunk = 64

    /// How a statement names its items.
    enum Key: String {
        case rowID = "id"
        case uuid
    }

    /// One item as read: what its MAC covers, the MAC stored, its free-form rows, and what the
    /// caller read from its first row (`Extra`).
    struct Row<Extra> {
        let rowID: Int64
        let uuid: UUID?
        fileprivate(set) var input: MACInput
        let storedMAC: Data?
        /// The access column as read, trusted only once the MAC is checked.
        let access: StoredAccess
        fileprivate(set) var freeform: [(name: [UInt8], value: [UInt8])]
        let extra: Extra

        /// `errSecDecode` unless the stored MAC covers exactly what was read.
        func check(_ key: IntegrityKey) throws(KeychainError) {
            guard key.verifies(input, storedMAC) else {
                let name = uuid.map { "item \($0.uuidString)" } ?? "item row \(rowID)"
                throw KeychainError(
                    SecStatus.decode,
                    detail: "\(name) fails its integrity check: its attributes were changed outside Keywell")
            }
        }

        /// A free-form row's value, by name.
        func freeformValue(_ name: String) -> String? {
            let wanted = Array(name.utf8)
            return freeform.first { $0.name == wanted }.map { String(decoding: $0.value, as: UTF8.self) }
        }

        /// The same row with `transform` of its extra.
        func mapExtra<Other>(_ transform: (Extra) -> Other) -> Row<Other> {
            Row<Other>(rowID: rowID, uuid: uuid, input: input, storedMAC: storedMAC, access: access, freeform: freeform, extra: transform(extra))
        }

        var freeformDictionary: [String: String] {
            var result: [String: String] = [:]
            for row in freeform {
                result[String(decoding: row.name, as: UTF8.self)] = String(decoding: row.value, as: UTF8.self)
            }
            return result
        }
    }

    /// Result columns of `select`: the row id, the covered columns from 1 on, the MAC, the
    /// access list, then `extraColumns`, then a free-form row's name and value (NULL for an item
    /// without any).
    static let firstCoveredColumn: Int32 = 1
    static let macColumn = Int32(1 + coveredColumns.count)
    static let accessColumn = macColumn + 1
    static let firstExtraColumn = accessColumn + 1

    /// One statement: an item's columns repeat on each of its free-form rows (LEFT JOIN), so the
    /// row and the free-form rows come from one snapshot. `joined` false: the item rows alone
    /// (no name and value columns), for a read inside a transaction that reads the free-form
    /// rows in a second statement (`Text.attributes`).
    static func select(_ key: Key, count: Int, extraColumns: [String] = [], withMAC: Bool = true, joined: Bool = true) -> String {
        var columns: [String] = ["item.id"]
        columns += coveredColumns.map { "item." + $0 }
        // NULL in its place when not checked: a locked file of format 1 has no such column yet.
        columns.append(withMAC ? "item.mac" : "NULL")
        // Likewise: files before format 3 have no access column (their items are all "any").
        columns.append(withMAC ? "item.access" : "NULL")
        columns += extraColumns
        let list = Array(repeating: "?", count: count).joined(separator: ", ")
        guard joined else {
            return "SELECT " + columns.joined(separator: ", ") + " FROM item WHERE item.\(key.rawValue) IN (" + list + ")"
        }
        columns += ["a.name", "a.value"]
        return "SELECT " + columns.joined(separator: ", ")
            + " FROM item LEFT JOIN item_attribute AS a ON a.item_id = item.id WHERE item.\(key.rawValue) IN (" + list + ")"
    }

    /// The free-form rows of `count` items, by row id.
    private static func attributes(count: Int) -> String {
        "SELECT item_id, name, value FROM item_attribute WHERE item_id IN ("
            + Array(repeating: "?", count: count).joined(separator: ", ") + ")"
    }

    /// `item.access` as a read found it (docs/file-format.md): NULL, text, or anything else.
    enum StoredAccess {
        case anyApplication
        case text(String)
        case notText
    }

    /// What a read is for, and so which statement it runs.
    enum Purpose {
        /// Rows named by id, nothing more than the check needs.
        case check
        /// Rows named by uuid, with the sealed secret (`item.secret`) as the extra column.
        case secrets
        /// Rows named by id, with the sealed secret as the extra column: a search that hands out
        /// its matches' secrets reads them in the statement that checks them.
        case checkWithSecret
        /// Rows named by id, without their MAC: for reads that cannot check it (locked).
        case unchecked

        fileprivate var key: Key { self == .secrets ? .uuid : .rowID }
        fileprivate var extraColumns: [String] { self == .secrets || self == .checkWithSecret ? ["item.secret"] : [] }
    }

    /// The statements' texts, by kind and item count.
    private enum Text: Int, CaseIterable {
        case check, secrets, checkWithSecret, unchecked
        /// Inside a transaction: the item rows, then their free-form rows, in two statements.
        /// The join returned every item column (the sealed secret, the MAC, the list) once per
        /// free-form row, and SQLite built each of those rows in full: most of a many-item
        /// read's statement time.
        case checkItems, secretsItems, checkWithSecretItems, uncheckedItems, attributes

        func build(count: Int) -> String {
            switch self {
            case .check: select(.rowID, count: count)
            case .secrets: select(.uuid, count: count, extraColumns: ["item.secret"])
            case .checkWithSecret: select(.rowID, count: count, extraColumns: ["item.secret"])
            case .unchecked: select(.rowID, count: count, withMAC: false)
            case .checkItems: select(.rowID, count: count, joined: false)
            case .secretsItems: select(.uuid, count: count, extraColumns: ["item.secret"], joined: false)
            case .checkWithSecretItems: select(.rowID, count: count, extraColumns: ["item.secret"], joined: false)
            case .uncheckedItems: select(.rowID, count: count, withMAC: false, joined: false)
            case .attributes: ItemIntegrity.attributes(count: count)
            }
        }
    }

    /// Each text built the first time its kind and count is read, then kept (statements are
    /// cached by their text, and building one cost more than a single item's check). Only the
    /// counts used: building all 65 of a kind at its first use kept 70 KiB of text in a daemon
    /// whose calls read one item at a time (docs/performance.md, "The daemon").
    private static let texts = Protected([String?](repeating: nil, count: Text.allCases.count * (chunk + 1)))

    private static func text(_ kind: Text, count: Int) -> String {
        let index = kind.rawValue * (chunk + 1) + count
        return texts.withLock { texts in
            if let known = texts[index] { return known }
            let built = kind.build(count: count)
            texts[index] = built
            return built
        }
    }

    /// Reads the items named by `keys` (at most `chunk`), in the order SQLite returns them;
    /// `extra` reads the caller's columns from each item's first row. Inside a transaction the
    /// item rows and their free-form rows come from two statements of its one snapshot;
    /// outside one, from one joined statement (two would be two snapshots).
    static func read<Extra>(
        _ purpose: Purpose, _ keys: [DatabaseValue], keychain: UUID, _ db: Database,
        extra: (RawStatement) throws -> Extra
    ) throws -> [Row<Extra>] {
        precondition(keys.count <= chunk)
        guard !keys.isEmpty else { return [] }
        let split = db.isInsideTransaction
        let sql = switch (purpose, split) {
        case (.check, false): text(.check, count: keys.count)
        case (.secrets, false): text(.secrets, count: keys.count)
        case (.checkWithSecret, false): text(.checkWithSecret, count: keys.count)
        case (.unchecked, false): text(.unchecked, count: keys.count)
        case (.check, true): text(.checkItems, count: keys.count)
        case (.secrets, true): text(.secretsItems, count: keys.count)
        case (.checkWithSecret, true): text(.checkWithSecretItems, count: keys.count)
        case (.unchecked, true): text(.uncheckedItems, count: keys.count)
        }
        let nameColumn = firstExtraColumn + Int32(purpose.extraColumns.count)
        let rows = try RawStatement(db, sql: sql, values: keys)
        var items: [Row<Extra>] = []
        items.reserveCapacity(keys.count)
        var indexOfRow: [Int64: Int] = [:]
        indexOfRow.reserveCapacity(keys.count)
        while try rows.step() {
            let rowID = rows.integer(0)
            let index: Int
            if let known = indexOfRow[rowID] {
                index = known
            } else {
                var input = MACInput(domain: domain, keychain: keychain)
                for column in firstCoveredColumn..<macColumn { input.appendColumn(rows, column) }
                if !rows.isNull(accessColumn) { input.appendColumn(rows, accessColumn) }
                let stored = rows.isNull(macColumn) ? nil : rows.blob(macColumn)
                let access: StoredAccess = rows.isNull(accessColumn) ? .anyApplication
                    : rows.storageType(accessColumn) == SQLITE_TEXT ? .text(rows.text(accessColumn)) : .notText
                index = items.count
                indexOfRow[rowID] = index
                items.append(Row(rowID: rowID, uuid: rows.uuid(firstCoveredColumn), input: input, storedMAC: stored,
                                 access: access, freeform: [], extra: try extra(rows)))
            }
            if !split, !rows.isNull(nameColumn) {
                let name = rows.withBytes(nameColumn) { Array($0) }
                let value = rows.withBytes(nameColumn + 1) { Array($0) }
                items[index].freeform.append((name, value))
            }
        }
        if split, !items.isEmpty {
            let attributes = try RawStatement(db, sql: text(.attributes, count: items.count), values: items.map { $0.rowID.databaseValue })
            while try attributes.step() {
                guard let index = indexOfRow[attributes.integer(0)] else { continue }
                let name = attributes.withBytes(1) { Array($0) }
                let value = attributes.withBytes(2) { Array($0) }
                items[index].freeform.append((name, value))
            }
        }
        for index in items.indices { items[index].input.appendFreeform(items[index].freeform) }
        return items
    }
}
