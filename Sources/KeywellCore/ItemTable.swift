import Foundation
import GRDB
import KeywellProtocol

/// A column kept beside an attribute's value so that matching and uniqueness see normalised text.
struct MatchColumn: Sendable {
    enum Form: Sendable { case normalized, folded, number }

    let attribute: ItemAttribute
    let form: Form

    var name: String {
        switch form {
        case .normalized, .number: "\(attribute.name)_n"
        case .folded: "\(attribute.name)_f"
        }
    }

    var isNumeric: Bool { form == .number }

    /// The column's value for an item: the transformed attribute, the missing-key default for a
    /// primary-key part the item lacks, or NULL.
    func value(for item: KeychainItem) -> DatabaseValue {
        guard attribute.belongs(to: item.itemClass) else { return .null }
        let value: AttributeValue
        if let present = item.attributes[attribute] {
            value = present
        } else if attribute.isPrimaryKey(of: item.itemClass) {
            value = attribute.missingKeyValue
        } else {
            return .null
        }
        return Self.transform(value, form)
    }

    static func transform(_ value: AttributeValue, _ form: Form) -> DatabaseValue {
        switch (form, value) {
        case (.normalized, .text(let text)): TextMatching.normalized(text).databaseValue
        case (.folded, .text(let text)): TextMatching.folded(text).databaseValue
        case (.number, .integer(let number)): number.databaseValue
        default: .null
        }
    }
}

/// SQL for the `item` table: rows to and from `KeychainItem`, and `ItemFilter` as WHERE clauses.
enum ItemTable {
    static let matchColumns: [MatchColumn] = ItemAttribute.allCases.flatMap { attribute -> [MatchColumn] in
        if attribute.isTextual { return [MatchColumn(attribute: attribute, form: .normalized), MatchColumn(attribute: attribute, form: .folded)] }
        if attribute.kind == .integer { return [MatchColumn(attribute: attribute, form: .number)] }
        return []
    }

    private static let attributeColumns = ItemAttribute.allCases.map { "\"\($0.name)\"" }
    private static let selectColumns = (["id", "uuid", "class"] + attributeColumns + ["secret"]).joined(separator: ", ")
    private static let writtenColumns = attributeColumns + matchColumns.map { $0.name } + ["secret"]

    private static let insertSQL =
        "INSERT INTO item (uuid, class, \(writtenColumns.joined(separator: ", "))) VALUES (?, ?, "
        + Array(repeating: "?", count: writtenColumns.count).joined(separator: ", ") + ")"
    private static let updateSQL =
        "UPDATE item SET " + writtenColumns.map { "\($0) = ?" }.joined(separator: ", ") + " WHERE id = ?"

    /// Inserts a new item; a primary-key collision is `errSecDuplicateItem`.
    static func insert(_ item: KeychainItem, _ db: Database) throws -> Int64 {
        var values = [item.uuid.data.databaseValue, item.itemClass.rawValue.databaseValue]
        values += writtenValues(item)
        try execute(insertSQL, values, db)
        return db.lastInsertedRowID
    }

    static func update(_ item: KeychainItem, _ db: Database) throws {
        try execute(updateSQL, writtenValues(item) + [item.rowID.databaseValue], db)
    }

    /// Binds without GRDB's argument validation: the statements and their values are built
    /// together here, and adds are the hot path of bulk imports.
    private static func execute(_ sql: String, _ values: [DatabaseValue], _ db: Database) throws {
        let statement = try db.cachedStatement(sql: sql)
        statement.setUncheckedArguments(StatementArguments(values: values))
        try statement.execute()
    }

    static func delete(rowID: Int64, _ db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM item WHERE id = ?").execute(arguments: [rowID])
    }

    static func count(_ db: Database) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM item")) ?? 0
    }

    /// Matching items in insertion order.
    static func fetch(_ filter: ItemFilter, limit: MatchLimit, _ db: Database) throws -> [KeychainItem] {
        var clauses: [String] = []
        var arguments: [DatabaseValue] = []
        if let itemClass = filter.itemClass {
            // A literal, not a parameter: SQLite only uses the partial indexes for literals.
            clauses.append("class = '\(itemClass.rawValue)'")
        }
        if let uuid = filter.itemUUID {
            clauses.append("uuid = ?")
            arguments.append(uuid.data.databaseValue)
        }
        // Canonical order keeps the number of distinct statements (and cached statements) small.
        for attribute in ItemAttribute.allCases {
            guard let value = filter.attributes[attribute] else { continue }
            let (clause, argument) = condition(attribute, value, caseInsensitive: filter.caseInsensitive)
            clauses.append(clause)
            arguments.append(argument)
        }
        var sql = "SELECT \(selectColumns) FROM item"
        if !clauses.isEmpty { sql += " WHERE " + clauses.joined(separator: " AND ") }
        sql += " ORDER BY id LIMIT ?"
        arguments.append(limit.sqlValue.databaseValue)

        let statement = try db.cachedStatement(sql: sql)
        statement.setUncheckedArguments(StatementArguments(values: arguments))
        let rows = try Row.fetchCursor(statement)
        var items: [KeychainItem] = []
        while let row = try rows.next() {
            items.append(try decode(row))
        }
        return items
    }

    private static func condition(
        _ attribute: ItemAttribute, _ value: AttributeValue, caseInsensitive: Bool
    ) -> (String, DatabaseValue) {
        switch attribute.kind {
        case .text, .fourCharCode:
            let form: MatchColumn.Form = caseInsensitive ? .folded : .normalized
            let column = MatchColumn(attribute: attribute, form: form)
            return ("\(column.name) = ?", MatchColumn.transform(value, form))
        case .integer:
            return ("\(attribute.name)_n = ?", MatchColumn.transform(value, .number))
        case .bool:
            // An item without the flag counts as false.
            return ("ifnull(\"\(attribute.name)\", 0) = ?", databaseValue(value))
        case .data, .date:
            return ("\"\(attribute.name)\" = ?", databaseValue(value))
        }
    }

    private static func writtenValues(_ item: KeychainItem) -> [DatabaseValue] {
        var values: [DatabaseValue] = []
        values.reserveCapacity(ItemAttribute.allCases.count + matchColumns.count + 3)
        for attribute in ItemAttribute.allCases {
            values.append(item.attributes[attribute].map(databaseValue) ?? .null)
        }
        for column in matchColumns {
            values.append(column.value(for: item))
        }
        values.append(item.sealedSecret.databaseValue)
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

    private static func decode(_ row: Row) throws -> KeychainItem {
        guard let uuid = UUID(data: row[1]), let itemClass = ItemClass(rawValue: row[2]) else {
            throw KeychainError(SecStatus.invalidKeychain, detail: "item row \(row[0] as Int64) is damaged")
        }
        var attributes: [ItemAttribute: AttributeValue] = [:]
        for (offset, attribute) in ItemAttribute.allCases.enumerated() {
            let index = 3 + offset
            guard !row.hasNull(atIndex: index) else { continue }
            switch attribute.kind {
            case .text, .fourCharCode: attributes[attribute] = .text(row[index])
            case .integer, .date: attributes[attribute] = .integer(row[index])
            case .bool: attributes[attribute] = .bool(row[index])
            case .data: attributes[attribute] = .data(row[index])
            }
        }
        return KeychainItem(
            rowID: row[0], uuid: uuid, itemClass: itemClass, attributes: attributes,
            sealedSecret: row[3 + ItemAttribute.allCases.count])
    }
}

extension StatementArguments {
    /// Without the key path GRDB's generic initialiser instantiates on every call.
    init(values: [DatabaseValue]) {
        self.init(values.lazy.map { $0 as (any DatabaseValueConvertible)? })
    }
}
