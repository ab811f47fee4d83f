import Foundation
import GRDB
import GRDBSQLite
import KeywellProtocol

/// `item.access` (format 3 on; docs/file-format.md): NULL = any application; otherwise the
/// identities as text, one a line (`AccessList.validated` keeps control characters out of them),
/// "" for none. Covered by the item's MAC (`ItemIntegrity`).
extension AccessList {
    var databaseValue: DatabaseValue {
        switch self {
        case .anyApplication: .null
        case .applications(let identities): identities.joined(separator: "\n").databaseValue
        }
    }

    /// What a new item's list is: the explicit one, else (the keychain enforcing access) the
    /// creator's identity alone. `creator` nil: no caller to name (a migration, an import), and
    /// the item trusts any application, unless `creatorUnidentified` says a caller made it whose
    /// identity could not be worked out: its item then trusts nobody (docs/access-control.md).
    static func forNewItem(creator: String?, explicit: AccessList?, enforceAccess: Bool, creatorUnidentified: Bool = false) -> AccessList {
        if let explicit { return explicit }
        guard enforceAccess else { return .anyApplication }
        if let creator { return .applications([creator]) }
        return creatorUnidentified ? .applications([]) : .anyApplication
    }
}

enum ItemAccessColumn {
    /// Sets the list of the item at `rowID`; its MAC is the caller's to renew.
    static func set(_ access: AccessList, rowID: Int64, _ db: Database) throws {
        try RawStatement(db, sql: "UPDATE item SET access = ? WHERE id = ?",
                         values: [access.databaseValue, rowID.databaseValue]).run()
        try UnexpectedChangeCount.check(db, "setting the access list of item row \(rowID)")
    }

    /// The lists of the items at `rowIDs` (one statement per 64). A file before format 3 has no
    /// column yet: every item of it trusts any application. `errSecInvalidKeychain` for a value
    /// Keywell never writes (checked reads catch it as a MAC failure first).
    static func read(rowIDs: [Int64], _ db: Database) throws -> [Int64: AccessList] {
        guard try hasColumn(db) else { return [:] }
        var result: [Int64: AccessList] = [:]
        var decoder = Decoder()
        try ChunkedLookup.forEachRow(of: rowIDs.map(\.databaseValue), db, selectIn: "SELECT id, access FROM item WHERE id IN") { rows in
            let rowID = rows.integer(0)
            if let list = try decoder.list(rows, column: 1, rowID: rowID) { result[rowID] = list }
        }
        return result
    }

    /// Reads lists row by row, each distinct text split and checked once: a keychain's items
    /// share a handful of lists (mostly their creators'), and a read of 1,000 items would
    /// otherwise decode 1,000 copies of the same few (docs/performance.md).
    struct Decoder {
        private var decoded: [String: AccessList] = [:]

        /// The list in `column` of the current row; nil for NULL (any application).
        mutating func list(_ rows: RawStatement, column: Int32, rowID: Int64) throws -> AccessList? {
            guard !rows.isNull(column) else { return nil }
            guard rows.storageType(column) == SQLITE_TEXT else { throw damaged(rowID) }
            let text = rows.text(column)
            if let known = decoded[text] { return known }
            do {
                let list = try AccessList.validated(identities(in: text))
                decoded[text] = list
                return list
            } catch {
                throw damaged(rowID)
            }
        }
    }

    /// A stored list's identities, one per line (docs/file-format.md). Split on the newline byte,
    /// not on Characters: every read of a list pays this, and grapheme breaking over paths and
    /// hashes cost more than the item's MAC (docs/performance.md).
    static func identities(in text: String) -> [String] {
        guard !text.isEmpty else { return [] }
        return text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether the file has the column (format 3 on). Asked of SQLite's parsed schema, which it
    /// keeps in memory, rather than by a `pragma_table_info` query: every read that judges access
    /// asks, and the query cost as much as reading the lists.
    static func hasColumn(_ db: Database) throws -> Bool {
        guard let connection = db.sqliteConnection else { return false }
        return sqlite3_table_column_metadata(connection, "main", "item", "access", nil, nil, nil, nil, nil) == SQLITE_OK
    }

    private static func damaged(_ rowID: Int64) -> KeychainError {
        KeychainError(SecStatus.invalidKeychain, detail: "item row \(rowID) has a damaged access list")
    }
}
