import Foundation
import GRDB
import KeywellProtocol
import KeywellSystem

/// SQL for the `item` table: rows to and from `KeychainItem`, and `ItemFilter` as WHERE clauses.
enum ItemTable {
    static let matchColumns: [MatchColumn] = ItemAttribute.allCases.flatMap { attribute -> [MatchColumn] in
        if attribute.isTextual {
            return [MatchColumn(attribute: attribute, form: .normalized), MatchColumn(attribute: attribute, form: .folded)]
        }
        return attribute.kind == .integer ? [MatchColumn(attribute: attribute, form: .number)] : []
    }

    private static let attributeColumns = ItemAttribute.allCases.map { "\"\($0.name)\"" }

    /// Which attributes a fetch reads.
    enum Columns: Hashable, Sendable {
        /// Every attribute.
        case all
        /// Only the primary key's attributes (what opening the secret needs): for lookups that
        /// return the secret or a reference but not the attributes.
        case keyAndSecret

        var attributes: [ItemAttribute] {
            switch self {
            case .all: ItemAttribute.allCases
            case .keyAndSecret: ItemClass.anyPrimaryKey
            }
        }
    }

    private static func selectColumns(_ attributes: [ItemAttribute]) -> String {
        (["id", "uuid", "class"] + attributes.map { "\"\($0.name)\"" } + ["secret"]).joined(separator: ", ")
    }
    /// Every column a write sets besides uuid, class, secret and mac: the attributes, then their
    /// match columns (what the integrity MAC covers after uuid and class).
    static let attributeAndMatchColumns = attributeColumns + matchColumns.map { $0.name }
    private static let updatedColumns = attributeAndMatchColumns + ["secret"]

    private static let insertSQL =
        "INSERT INTO item (uuid, class, \((updatedColumns + ["mac", "access"]).joined(separator: ", "))) VALUES (?, ?, "
        + Array(repeating: "?", count: updatedColumns.count + 2).joined(separator: ", ") + ")"
    private static let updateSQL =
        "UPDATE item SET " + updatedColumns.map { "\($0) = ?" }.joined(separator: ", ") + " WHERE id = ?"

    /// Inserts a new item with its access list and integrity MAC (`ItemIntegrity.mac`); a
    /// primary-key collision is `errSecDuplicateItem`.
    /// `values`: the item's `attributeAndMatchValues`, when the caller built them already (for its MAC).
    static func insert(_ item: KeychainItem, values attributes: [DatabaseValue]? = nil, access: AccessList, mac: Data,
                       _ db: Database) throws -> Int64 {
        var values = [item.uuid.data.databaseValue, item.itemClass.rawValue.databaseValue]
        values += attributes ?? attributeAndMatchValues(item)
        values += [item.sealedSecret.databaseValue, mac.databaseValue, access.databaseValue]
        try RawStatement(db, sql: insertSQL, values: values).run()
        // An insert a trigger swallowed would leave lastInsertedRowID naming another row.
        try UnexpectedChangeCount.check(db, "adding an item")
        return db.lastInsertedRowID
    }

    /// Writes the item's attributes and secret; its MAC is left to the caller to renew
    /// (`ItemIntegrity.renew`) once the item's free-form rows are final too.
    static func update(_ item: KeychainItem, _ db: Database) throws {
        let values = attributeAndMatchValues(item) + [item.sealedSecret.databaseValue, item.rowID.databaseValue]
        try RawStatement(db, sql: updateSQL, values: values).run()
        try UnexpectedChangeCount.check(db, "updating item row \(item.rowID ?? 0)")
    }

    static func delete(rowID: Int64, _ db: Database) throws {
        try RawStatement(db, sql: "DELETE FROM item WHERE id = ?", values: [rowID.databaseValue]).run()
        try UnexpectedChangeCount.check(db, "deleting item row \(rowID)")
    }

    static func count(_ db: Database) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM item")) ?? 0
    }

    /// Matching items in insertion order. Each row SQLite returns is checked in Swift against the
    /// filter (`satisfies`): a row that does not satisfy it came through a damaged or edited index
    /// entry, and is left out and reported to `onIndexMismatch` by row id (docs/file-format.md,
    /// "Indexes are not trusted"). Such a row still counts against `limit`.
    static func fetch(
        _ filter: ItemFilter, limit: MatchLimit, columns: Columns = .all, _ db: Database,
        onIndexMismatch: (Int64) -> Void = { _ in }
    ) throws -> [KeychainItem] {
        let present = filter.attributes.sorted { $0.key.rawValue < $1.key.rawValue }
        var shape = FetchShape(
            itemClass: filter.itemClass, byUUID: filter.itemUUID != nil, attributes: 0,
            caseInsensitive: filter.caseInsensitive, ordered: true, columns: columns)
        var arguments: [DatabaseValue] = []
        arguments.reserveCapacity(present.count + 2)
        if let uuid = filter.itemUUID { arguments.append(uuid.data.databaseValue) }
        for (attribute, value) in present {
            shape.attributes |= 1 << UInt64(attribute.rawValue)
            arguments.append(argument(attribute, value, caseInsensitive: filter.caseInsensitive))
        }
        // A generic password's service and account, matched exactly, leave at most one item per
        // access group (the key's unique index): sorting those few here spares SQLite a sorter,
        // a good part of a lookup's cost.
        shape.ordered = !(filter.itemClass == .genericPassword && !filter.caseInsensitive
            && filter.attributes[.service] != nil && filter.attributes[.account] != nil)
        let conditionArguments = arguments
        if shape.ordered { arguments.append(limit.sqlValue.databaseValue) }

        let plan = plan(for: shape)
        let rows = try RawStatement(db, sql: plan.sql, values: arguments)
        var items: [KeychainItem] = []
        do {
            while try rows.step() {
                let item = try decode(rows, plan.attributes)
                // A row whose own columns were edited to match passes the stored check: the MAC's to catch.
                guard try satisfies(item, filter) || storedRowSatisfies(item, plan, conditionArguments, db) else {
                    onIndexMismatch(rows.integer(0))
                    continue
                }
                items.append(item)
            }
        } catch {
            rows.finish()
            throw error
        }
        if !shape.ordered {
            items.sort { ($0.rowID ?? 0) < ($1.rowID ?? 0) }  // rows always have one
            if case .count(let count) = limit, items.count > count { items.removeSubrange(count...) }
        }
        return items
    }

    /// What a fetch's SQL depends on: which conditions it has, not their values.
    private struct FetchShape: Hashable {
        var itemClass: ItemClass?
        var byUUID: Bool
        /// One bit per `ItemAttribute.rawValue`.
        var attributes: UInt64
        var caseInsensitive: Bool
        /// ORDER BY id with a LIMIT; otherwise the caller sorts and limits.
        var ordered: Bool
        var columns: Columns
    }

    /// A fetch's statement and the attributes it reads: those of its `Columns`, then those its
    /// conditions name (which `satisfies` needs) when they are not among them.
    private struct FetchPlan {
        let sql: String
        let attributes: [ItemAttribute]
        /// The same conditions on one row read by row id (the table, no index), for the rare row
        /// `satisfies` rejects: whether the row's stored match columns satisfy them.
        let recheckSQL: String
    }

    /// Built once per shape: building it (and the match columns' names) cost more than running it.
    private static let fetchPlans = Protected<[FetchShape: FetchPlan]>([:])

    private static func plan(for shape: FetchShape) -> FetchPlan {
        if let plan = fetchPlans.withLock({ $0[shape] }) { return plan }
        var clauses: [String] = []
        if let itemClass = shape.itemClass {
            // A literal, not a parameter: SQLite only uses the partial indexes for literals.
            clauses.append("class = '\(itemClass.rawValue)'")
        }
        if shape.byUUID { clauses.append("uuid = ?") }
        // Canonical order keeps the number of distinct statements (and cached statements) small.
        for attribute in ItemAttribute.allCases where shape.attributes & (1 << UInt64(attribute.rawValue)) != 0 {
            clauses.append(condition(attribute, caseInsensitive: shape.caseInsensitive))
        }
        let named = ItemAttribute.allCases.filter { shape.attributes & (1 << UInt64($0.rawValue)) != 0 }
        let attributes = shape.columns.attributes + named.filter { !shape.columns.attributes.contains($0) }
        var sql = "SELECT \(selectColumns(attributes)) FROM item"
        if !clauses.isEmpty { sql += " WHERE " + clauses.joined(separator: " AND ") }
        if shape.ordered { sql += " ORDER BY id LIMIT ?" }
        let recheckSQL = "SELECT 1 FROM item NOT INDEXED WHERE " + (clauses + ["id = ?"]).joined(separator: " AND ")
        let plan = FetchPlan(sql: sql, attributes: attributes, recheckSQL: recheckSQL)
        fetchPlans.withLock { $0[shape] = plan }
        return plan
    }

    /// Whether the item's own values satisfy `filter` the way the WHERE clause (`condition`)
    /// compares them. SQLite trusts its indexes: an index entry whose key was damaged or edited
    /// hands back a row that does not satisfy the clause, the other item's row and secret.
    static func satisfies(_ item: KeychainItem, _ filter: ItemFilter) -> Bool {
        if let itemClass = filter.itemClass, item.itemClass != itemClass { return false }
        if let uuid = filter.itemUUID, item.uuid != uuid { return false }
        for (attribute, value) in filter.attributes {
            let own = ownValue(attribute, of: item, caseInsensitive: filter.caseInsensitive)
            // As in SQL, NULL equals nothing.
            guard !own.isNull, own == argument(attribute, value, caseInsensitive: filter.caseInsensitive) else { return false }
        }
        return true
    }

    /// Whether the row, read by row id, satisfies the fetch's conditions by its stored columns.
    private static func storedRowSatisfies(_ item: KeychainItem, _ plan: FetchPlan, _ arguments: [DatabaseValue], _ db: Database) throws -> Bool {
        guard let rowID = item.rowID else { return false }
        let rows = try RawStatement(db, sql: plan.recheckSQL, values: arguments + [rowID.databaseValue])
        defer { rows.finish() }
        return try rows.step()
    }

    /// What the column `condition(attribute, …)` tests would hold for this item, from its own attributes.
    private static func ownValue(_ attribute: ItemAttribute, of item: KeychainItem, caseInsensitive: Bool) -> DatabaseValue {
        switch attribute.kind {
        case .text, .fourCharCode: MatchColumn(attribute: attribute, form: caseInsensitive ? .folded : .normalized).value(for: item)
        case .integer: MatchColumn(attribute: attribute, form: .number).value(for: item)
        case .bool: item.attributes[attribute].map(databaseValue) ?? false.databaseValue
        case .data, .date: item.attributes[attribute].map(databaseValue) ?? .null
        }
    }

    private static func condition(_ attribute: ItemAttribute, caseInsensitive: Bool) -> String {
        switch attribute.kind {
        case .text, .fourCharCode:
            "\(MatchColumn(attribute: attribute, form: caseInsensitive ? .folded : .normalized).name) = ?"
        case .integer:
            "\(MatchColumn(attribute: attribute, form: .number).name) = ?"
        case .bool:
            // An item without the flag counts as false.
            "ifnull(\"\(attribute.name)\", 0) = ?"
        case .data, .date:
            "\"\(attribute.name)\" = ?"
        }
    }

    /// The value `condition(attribute, …)` compares with.
    private static func argument(_ attribute: ItemAttribute, _ value: AttributeValue, caseInsensitive: Bool) -> DatabaseValue {
        switch attribute.kind {
        case .text, .fourCharCode: MatchColumn.transform(value, caseInsensitive ? .folded : .normalized)
        case .integer: MatchColumn.transform(value, .number)
        case .bool, .data, .date: databaseValue(value)
        }
    }

    /// The values of `attributeAndMatchColumns` for `item`.
    static func attributeAndMatchValues(_ item: KeychainItem) -> [DatabaseValue] {
        var values: [DatabaseValue] = []
        values.reserveCapacity(ItemAttribute.allCases.count + matchColumns.count + 2)
        for attribute in ItemAttribute.allCases {
            values.append(item.attributes[attribute].map(databaseValue) ?? .null)
        }
        for column in matchColumns {
            values.append(column.value(for: item))
        }
        return values
    }

    private static func databaseValue(_ value: AttributeValue) -> DatabaseValue {
        switch value {
        case .text(let text): text.databaseValue
        case .integer(let number): number.databaseValue
        case .bool(let flag): flag.databaseValue
        case .data(let bytes): bytes.databaseValue
        }
    }

    /// The columns of `selectColumns`: id, uuid, class, the attributes asked for, secret.
    private static func decode(_ row: RawStatement, _ columns: [ItemAttribute]) throws -> KeychainItem {
        guard let uuid = row.uuid(1), let itemClass = ItemClass(rawValue: row.text(2)) else {
            throw KeychainError(SecStatus.invalidKeychain, detail: "item row \(row.integer(0)) is damaged")
        }
        var attributes: [ItemAttribute: AttributeValue] = [:]
        for (offset, attribute) in columns.enumerated() {
            let column = Int32(3 + offset)
            guard !row.isNull(column) else { continue }
            switch attribute.kind {
            case .text, .fourCharCode: attributes[attribute] = .text(row.text(column))
            case .integer, .date: attributes[attribute] = .integer(row.integer(column))
            case .bool: attributes[attribute] = .bool(row.integer(column) != 0)
            case .data: attributes[attribute] = .data(row.blob(column))
            }
        }
        return KeychainItem(
            rowID: row.integer(0), uuid: uuid, itemClass: itemClass, attributes: attributes,
            sealedSecret: row.blob(Int32(3 + columns.count)))
    }
}
