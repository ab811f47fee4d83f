import GRDB

/// A look-up of many items by key, one statement per `ItemIntegrity.chunk` keys: the statement's
/// `IN (?, …)` list stays within SQLite's limits and its text among a few cached shapes.
enum ChunkedLookup {
    /// Runs `selectIn` followed by the chunk's list (`(?, ?, …)`) for each chunk of `keys`, and hands
    /// every row it returns to `row`. Linear in the number of keys.
    static func forEachRow(
        of keys: [DatabaseValue], _ db: Database, selectIn: String, _ row: (RawStatement) throws -> Void
    ) throws {
        for start in stride(from: 0, to: keys.count, by: ItemIntegrity.chunk) {
            let part = Array(keys[start..<min(keys.count, start + ItemIntegrity.chunk)])
            let rows = try RawStatement(db, sql: selectIn + " (" + Array(repeating: "?", count: part.count).joined(separator: ", ") + ")", values: part)
            while try rows.step() { try row(rows) }
        }
    }
}
