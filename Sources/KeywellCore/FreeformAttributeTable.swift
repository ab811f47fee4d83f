import Foundation
import GRDB

/// SQL for `item_attribute`: an item's free-form string attributes (the Secret Service's), one row
/// per attribute, found through the (name, value) index.
enum FreeformAttributeTable {
    /// Past this many rows a pair counts as "common"; estimating costs at most this many steps.
    private static let estimateCap = 64

    static func insert(_ attributes: [String: String], itemID: Int64, _ db: Database) throws {
        for (name, value) in attributes {
            try RawStatement(db, sql: "INSERT INTO item_attribute (item_id, name, value) VALUES (?, ?, ?)",
                             values: [itemID.databaseValue, name.databaseValue, value.databaseValue]).run()
        }
    }

    static func set(_ name: String, to value: String?, itemID: Int64, _ db: Database) throws {
        if let value {
            try RawStatement(db, sql: "INSERT OR REPLACE INTO item_attribute (item_id, name, value) VALUES (?, ?, ?)",
                             values: [itemID.databaseValue, name.databaseValue, value.databaseValue]).run()
        } else {
            try RawStatement(db, sql: "DELETE FROM item_attribute WHERE item_id = ? AND name = ?",
                             values: [itemID.databaseValue, name.databaseValue]).run()
        }
    }

    /// Removes every row except the hidden ones (content type, type).
    static func deleteVisible(itemID: Int64, _ db: Database) throws {
        let hidden = SecretServiceMapping.hiddenRows
        try RawStatement(db, sql: "DELETE FROM item_attribute WHERE item_id = ? AND name NOT IN (?, ?)",
                         values: [itemID.databaseValue, hidden[0].databaseValue, hidden[1].databaseValue]).run()
    }

    static func deleteAll(itemID: Int64, _ db: Database) throws {
        try RawStatement(db, sql: "DELETE FROM item_attribute WHERE item_id = ?", values: [itemID.databaseValue]).run()
    }

    /// Every row of one item, hidden ones included.
    static func attributes(itemID: Int64, _ db: Database) throws -> [String: String] {
        let rows = try RawStatement(db, sql: "SELECT name, value FROM item_attribute WHERE item_id = ?",
                                    values: [itemID.databaseValue])
        var result: [String: String] = [:]
        while try rows.step() {
            result[rows.text(0)] = rows.text(1)
        }
        return result
    }

    /// Items having every pair (exact, case-sensitive), in id order. `pairs` must not be
    /// empty. The rarest pair drives the search and the others are checked by primary key, so the
    /// cost follows the number of matches, not the number of items: `xdg:schema` pairs shared by
    /// thousands of items are never walked when a rarer pair is there.
    static func matchingItems(_ pairs: [String: String], _ db: Database) throws -> [(rowID: Int64, uuid: UUID)] {
        var estimated = pairs.map { (name: $0.key, value: $0.value, count: 1) }
        // One pair needs no ordering.
        if estimated.count > 1 {
            let counts = try estimates(estimated.map { ($0.name, $0.value) }, db)
            if counts.contains(0) { return [] }
            for index in estimated.indices { estimated[index].count = counts[index] }
        }
        estimated.sort { ($0.count, $0.name) < ($1.count, $1.name) }

        // CROSS JOIN fixes the loop order: the rarest pair outermost, then primary-key checks.
        var sql = "SELECT item.id, item.uuid FROM item_attribute AS a0"
        for index in 1..<estimated.count { sql += " CROSS JOIN item_attribute AS a\(index)" }
        sql += " CROSS JOIN item WHERE a0.name = ? AND a0.value = ? AND item.id = a0.item_id"
        for index in 1..<estimated.count {
            sql += " AND a\(index).item_id = a0.item_id AND a\(index).name = ? AND a\(index).value = ?"
        }
        sql += " ORDER BY a0.item_id"
        var values: [DatabaseValue] = []
        for pair in estimated {
            values.append(pair.name.databaseValue)
            values.append(pair.value.databaseValue)
        }
        let rows = try RawStatement(db, sql: sql, values: values)
        var items: [(rowID: Int64, uuid: UUID)] = []
        while try rows.step() {
            if let uuid = UUID(data: rows.blob(1)) { items.append((rows.integer(0), uuid)) }
        }
        return items
    }

    /// How many items have each pair, counted up to `estimateCap`, in one statement.
    private static func estimates(_ pairs: [(String, String)], _ db: Database) throws -> [Int] {
        let count = "(SELECT count(*) FROM (SELECT 1 FROM item_attribute WHERE name = ? AND value = ? LIMIT \(estimateCap)))"
        let sql = "SELECT " + Array(repeating: count, count: pairs.count).joined(separator: ", ")
        let rows = try RawStatement(db, sql: sql, values: pairs.flatMap { [$0.0.databaseValue, $0.1.databaseValue] })
        defer { rows.finish() }
        guard try rows.step() else { return Array(repeating: 0, count: pairs.count) }
        return (0..<pairs.count).map { Int(rows.integer(Int32($0))) }
    }
}
