import Foundation
import GRDB

/// SQL for `item_attribute`: an item's free-form string attributes (the Secret Service's), one row
/// per attribute, found through the (name, value) index.
enum FreeformAttributeTable {
    /// Past this many rows a pair counts as "common"; estimating costs at most this many steps.
    private static let estimateCap = 64

    /// Fewer than this many rows is a rare pair, known exactly: nearly every query has one (an id,
    /// a user name), so the common pairs (`xdg:schema`) cost only this many steps each. It is
    /// also as far as a search's first try walks before it counts the pairs.
    private static let quickCap = 8

    /// A matching item: its row id (the order of creation) and its identity.
    typealias Match = (rowID: Int64, uuid: UUID)

    static func insert(_ attributes: [String: String], itemID: Int64, _ db: Database) throws {
        for (name, value) in attributes {
            try RawStatement(db, sql: "INSERT INTO item_attribute (item_id, name, value) VALUES (?, ?, ?)",
                             values: [itemID.databaseValue, name.databaseValue, value.databaseValue]).run()
            try UnexpectedChangeCount.check(db, "adding an attribute of item row \(itemID)")
        }
    }

    static func set(_ name: String, to value: String?, itemID: Int64, _ db: Database) throws {
        if let value {
            try RawStatement(db, sql: "INSERT OR REPLACE INTO item_attribute (item_id, name, value) VALUES (?, ?, ?)",
                             values: [itemID.databaseValue, name.databaseValue, value.databaseValue]).run()
            try UnexpectedChangeCount.check(db, "setting an attribute of item row \(itemID)")
        } else {
            try RawStatement(db, sql: "DELETE FROM item_attribute WHERE item_id = ? AND name = ?",
                             values: [itemID.databaseValue, name.databaseValue]).run()
        }
    }

    /// Removes every row except the hidden ones (content type, type).
    static func deleteVisible(itemID: Int64, _ db: Database) throws {
        let hidden = FreeformItem.hiddenRows
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

    /// Rows of `item` (`id, uuid`) that a search adds to the pairs' matches, in the same statement
    /// (native items found by their derived attributes), so that a search is one read.
    struct ItemBranch {
        /// What follows `WHERE` in a SELECT from `item`.
        let condition: String
        let values: [DatabaseValue]

        /// The third column tells a branch's rows from the pairs' candidates.
        var sql: String { "SELECT id, uuid, \(RowKind.branch) FROM item WHERE " + condition }
    }

    /// Items having every pair (exact, case-sensitive), and the items of `branches`, in id order.
    /// `pairs` must not be empty. The rarest pair drives the search and the others are checked by
    /// primary key, so the cost follows the number of matches, not the number of items:
    /// `xdg:schema` pairs shared by thousands of items are never walked when a rarer pair is there.
    ///
    /// Nearly every search has a rare pair, so the first try guesses one (pairs seen to be common
    /// go last) and gives up after `quickCap` candidates: one statement, no counting. Only then
    /// are the pairs counted (`estimates`) to pick the driver. The guess changes the cost only,
    /// never the matches.
    static func matchingItems(_ pairs: [String: String], _ db: Database, including branches: [ItemBranch] = []) throws -> [Match] {
        var ordered = pairs.map { (name: $0.key, value: $0.value, count: 0) }
        if ordered.count == 1 {
            return try matches(drivenBy: ordered, including: branches, db)
        }
        // Until counted, `count` is 1 for a pair seen to be common and 0 for the others.
        let common = CommonPairs.shared.contains(ordered.map { ($0.name, $0.value) })
        for index in ordered.indices { ordered[index].count = common[index] ? 1 : 0 }
        ordered.sort { ($0.count, $0.name) < ($1.count, $1.name) }
        if case .found(let matches) = try walk(drivenBy: ordered, including: branches, budget: quickCap, db) { return matches }

        CommonPairs.shared.insert(name: ordered[0].name, value: ordered[0].value)
        guard let counts = try estimates(ordered, db) else {
            return try branches.isEmpty ? [] : matches(ofBranches: branches, db)
        }
        for index in ordered.indices { ordered[index].count = counts[index] }
        ordered.sort { ($0.count, $0.name) < ($1.count, $1.name) }
        return try matches(drivenBy: ordered, including: branches, db)
    }

    private enum Walk {
        case found([Match])
        case pastBudget
    }

    /// The search with `pairs[0]` driving it, to the end.
    private static func matches(drivenBy pairs: [(name: String, value: String, count: Int)], including branches: [ItemBranch],
                                _ db: Database) throws -> [Match] {
        guard case .found(let matches) = try walk(drivenBy: pairs, including: branches, budget: .max, db) else { return [] }
        return matches
    }

    /// The search with `pairs[0]` driving it, given up once it walked more than `budget` candidates.
    private static func walk(drivenBy pairs: [(name: String, value: String, count: Int)], including branches: [ItemBranch],
                             budget: Int, _ db: Database) throws -> Walk {
        // In the text's order: the other pairs (the checks come first, in the result column), then the driver.
        var values: [DatabaseValue] = []
        values.reserveCapacity(2 * pairs.count + branches.reduce(0) { $0 + $1.values.count })
        for pair in pairs.dropFirst() + pairs.prefix(1) {
            values.append(pair.name.databaseValue)
            values.append(pair.value.databaseValue)
        }
        var sql = SQLByPairCount.candidates(pairs.count)
        for branch in branches {
            sql += " UNION ALL " + branch.sql
            values += branch.values
        }
        let rows = try RawStatement(db, sql: sql, values: values)
        var found: [Match] = []
        var candidates = 0
        while try rows.step() {
            let kind = rows.integer(2)
            if kind != RowKind.branch {
                candidates += 1
                if candidates > budget {
                    rows.finish()
                    return .pastBudget
                }
            }
            guard kind != RowKind.candidate, let uuid = rows.uuid(1) else { continue }
            found.append((rows.integer(0), uuid))
        }
        return .found(inIDOrder(found))
    }

    /// The branches alone (no item has every pair).
    private static func matches(ofBranches branches: [ItemBranch], _ db: Database) throws -> [Match] {
        let rows = try RawStatement(db, sql: branches.map(\.sql).joined(separator: " UNION ALL "),
                                    values: branches.flatMap(\.values))
        var found: [Match] = []
        while try rows.step() {
            if let uuid = rows.uuid(1) { found.append((rows.integer(0), uuid)) }
        }
        return inIDOrder(found)
    }

    /// Sorted by id, each item once (an item could match through both kinds of row).
    private static func inIDOrder(_ found: [Match]) -> [Match] {
        var sorted = found.sorted { $0.rowID < $1.rowID }
        var last: Int64?
        sorted.removeAll { item in
            defer { last = item.rowID }
            return item.rowID == last
        }
        return sorted
    }

    /// The third column of a search's rows: a candidate lacking a pair, a match, a branch's item.
    private enum RowKind {
        static let candidate: Int64 = 0
        static let branch: Int64 = 2
    }

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
    static let candidateTexts = (0...prebuilt).map(candidateText)
    static let estimateTexts = (0...prebuilt).map(estimateText)

    static func candidates(_ count: Int) -> String { count <= prebuilt ? candidateTexts[count] : candidateText(count) }
    static func estimates(_ count: Int) -> String { count <= prebuilt ? estimateTexts[count] : estimateText(count) }

    /// The driver's rows (the last pair bound) each with 1 when the item has the other pairs too
    /// (checked by primary key; the first pairs bound), else 0. No ORDER BY: branches may follow,
    /// and the rows are put in id order after.
    static func candidateText(_ count: Int) -> String {
        let checks = (1..<max(1, count)).map { index in
            "EXISTS (SELECT 1 FROM item_attribute AS a\(index) WHERE a\(index).item_id = a0.item_id"
                + " AND a\(index).name = ? AND a\(index).value = ?)"
        }
        return "SELECT item.id, item.uuid, " + (checks.isEmpty ? "1" : checks.joined(separator: " AND "))
            + " FROM item_attribute AS a0 CROSS JOIN item WHERE a0.name = ? AND a0.value = ? AND item.id = a0.item_id"
    }

    /// One count per pair (name, value, then the cap as LIMIT).
    static func estimateText(_ count: Int) -> String {
        let one = "(SELECT count(*) FROM (SELECT 1 FROM item_attribute WHERE name = ? AND value = ? LIMIT ?))"
        return "SELECT " + Array(repeating: one, count: count).joined(separator: ", ")
    }
}
