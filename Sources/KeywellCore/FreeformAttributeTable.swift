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
            guard let counts = try estimates(estimated, db) else { return [] }
            for index in estimated.indices { estimated[index].count = counts[index] }
        }
        estimated.sort { ($0.count, $0.name) < ($1.count, $1.name) }

        var values: [DatabaseValue] = []
        values.reserveCapacity(2 * estimated.count)
        for pair in estimated {
            values.append(pair.name.databaseValue)
            values.append(pair.value.databaseValue)
        }
        let rows = try RawStatement(db, sql: SQLByPairCount.matching(estimated.count), values: values)
        var items: [(rowID: Int64, uuid: UUID)] = []
        while try rows.step() {
            if let uuid = UUID(data: rows.blob(1)) { items.append((rows.integer(0), uuid)) }
        }
        return items
    }

    /// Fewer than this many rows is a rare pair, known exactly: nearly every query has one (an id,
    /// a user name), so the common pairs (`xdg:schema`) cost only this many steps each.
    private static let quickCap = 8

    /// How many items have each pair, in one statement; nil when a pair has none. Counted up to
    /// `quickCap` first; only when every pair reaches it are they counted up to `estimateCap`.
    private static func estimates(_ pairs: [(name: String, value: String, count: Int)], _ db: Database) throws -> [Int]? {
        let quick = try counts(pairs, cappedAt: quickCap, db)
        if quick.contains(0) { return nil }
        guard !quick.contains(where: { $0 < quickCap }) else { return quick }
        return try counts(pairs, cappedAt: estimateCap, db)
    }

    /// Each pair's number of rows, counted up to `cap`.
    private static func counts(_ pairs: [(name: String, value: String, count: Int)], cappedAt cap: Int, _ db: Database) throws -> [Int] {
        var values: [DatabaseValue] = []
        values.reserveCapacity(3 * pairs.count)
        let limit = cap.databaseValue
        for pair in pairs {
            values.append(pair.name.databaseValue)
            values.append(pair.value.databaseValue)
            values.append(limit)
        }
        let rows = try RawStatement(db, sql: SQLByPairCount.estimates(pairs.count), values: values)
        defer { rows.finish() }
        guard try rows.step() else { return Array(repeating: 0, count: pairs.count) }
        return (0..<pairs.count).map { Int(rows.integer(Int32($0))) }
    }
}

/// The statements' text depends only on the number of pairs: built once for the usual numbers,
/// since joining it on every search cost more than running it.
private enum SQLByPairCount {
    static let prebuilt = 8
    static let matchingTexts = (0...prebuilt).map(matchingText)
    static let estimateTexts = (0...prebuilt).map(estimateText)

    static func matching(_ count: Int) -> String { count <= prebuilt ? matchingTexts[count] : matchingText(count) }
    static func estimates(_ count: Int) -> String { count <= prebuilt ? estimateTexts[count] : estimateText(count) }

    /// CROSS JOIN fixes the loop order: the first pair (the rarest) outermost, then primary-key
    /// checks of the others.
    static func matchingText(_ count: Int) -> String {
        var sql = "SELECT item.id, item.uuid FROM item_attribute AS a0"
        for index in 1..<max(1, count) { sql += " CROSS JOIN item_attribute AS a\(index)" }
        sql += " CROSS JOIN item WHERE a0.name = ? AND a0.value = ? AND item.id = a0.item_id"
        for index in 1..<max(1, count) {
            sql += " AND a\(index).item_id = a0.item_id AND a\(index).name = ? AND a\(index).value = ?"
        }
        return sql + " ORDER BY a0.item_id"
    }

    /// One count per pair (name, value, then the cap as LIMIT).
    static func estimateText(_ count: Int) -> String {
        let one = "(SELECT count(*) FROM (SELECT 1 FROM item_attribute WHERE name = ? AND value = ? LIMIT ?))"
        return "SELECT " + Array(repeating: one, count: count).joined(separator: ", ")
    }
}
