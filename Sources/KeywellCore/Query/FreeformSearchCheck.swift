import Foundation
import GRDB
import KeywellProtocol

/// A free-form search's matches checked against what each item itself holds: SQLite trusts
/// its indexes, so a damaged or edited entry of `item_attribute_lookup` (or of an `item` index a
/// native branch uses) hands back an item that lacks the pair searched for (docs/file-format.md,
/// "Indexes are not trusted"). Each match's row and free-form rows are read by row id and item id
/// (the tables themselves, no index) in the statement the integrity check reads anyway, checked
/// against its MAC when `integrity` is given, and kept only if its free-form rows hold every pair,
/// or, for a native item, its own columns satisfy the pairs' native conditions.
enum FreeformSearchCheck {
    /// The matches in their order, without those that fail: a MAC that does not verify throws
    /// (`errSecDecode`); an item the query does not match is left out and reported to `onIndexMismatch`.
    static func verified(
        _ matches: [FreeformAttributeTable.Match], query: [String: String], native conditions: KeychainStore.NativeConditions,
        keychain: UUID, integrity: IntegrityKey?,
        _ db: Database, onIndexMismatch: (Int64) -> Void
    ) throws -> [UUID] {
        try verifiedRows(matches, query: query, native: conditions, keychain: keychain, integrity: integrity,
                         purpose: integrity == nil ? .unchecked : .check, db, onIndexMismatch: onIndexMismatch) { _ in () }
            .compactMap(\.uuid)
    }

    /// `verified`'s rows themselves, in the matches' order, each with what `extra` read from its
    /// first row: a read that needs more of its matches (their secrets, `purpose`
    /// `.checkWithSecret`, and their access lists) gets it from the statement that checks them.
    static func verifiedRows<Extra>(
        _ matches: [FreeformAttributeTable.Match], query: [String: String], native conditions: KeychainStore.NativeConditions,
        keychain: UUID, integrity: IntegrityKey?, purpose: ItemIntegrity.Purpose,
        _ db: Database, onIndexMismatch: (Int64) -> Void, extra: (RawStatement) throws -> Extra
    ) throws -> [ItemIntegrity.Row<Extra>] {
        let native = NativeQuery(conditions)
        var kept: [Int64: ItemIntegrity.Row<Extra>] = [:]
        kept.reserveCapacity(matches.count)
        for start in stride(from: 0, to: matches.count, by: ItemIntegrity.chunk) {
            let part = matches[start..<min(matches.count, start + ItemIntegrity.chunk)]
            let rows = try ItemIntegrity.read(purpose, part.map { $0.rowID.databaseValue }, keychain: keychain, db) { row in
                (try native.map { try $0.columns(of: row) }, try extra(row))
            }
            for row in rows {
                if let integrity { try row.check(integrity) }
                if hasEveryPair(row, query) || (native.map { $0.matches(row.extra.0) } ?? false) { kept[row.rowID] = row.mapExtra(\.1) }
            }
        }
        var found: [ItemIntegrity.Row<Extra>] = []
        found.reserveCapacity(kept.count)
        for match in matches {
            if let row = kept[match.rowID] { found.append(row) } else { onIndexMismatch(match.rowID) }
        }
        return found
    }

    /// Byte for byte, as SQLite compares TEXT.
    private static func hasEveryPair<Extra>(_ row: ItemIntegrity.Row<Extra>, _ query: [String: String]) -> Bool {
        query.allSatisfy { name, value in
            let name = Array(name.utf8), value = Array(value.utf8)
            return row.freeform.contains { $0.name == name && $0.value == value }
        }
    }

    /// The native conditions a query sets per class (`KeychainStore.NativeConditions`), nil when
    /// no class can match: then no column is read.
    private struct NativeQuery {
        let conditions: [ItemClass: [(attribute: ItemAttribute, value: AttributeValue)]]
        /// What `columns(of:)` reads: every attribute a condition names, and the access group.
        let attributes: [ItemAttribute]

        init?(_ conditions: KeychainStore.NativeConditions) {
            guard !conditions.isEmpty else { return nil }
            self.conditions = conditions
            var named: Set<ItemAttribute> = [.accessGroup]
            for list in conditions.values { named.formUnion(list.map(\.attribute)) }
            attributes = named.sorted { $0.rawValue < $1.rawValue }
        }

        /// The item's class and the attributes needed, from the integrity read's first row (its
        /// covered columns: uuid, class, then the attributes in `ItemAttribute` order).
        func columns(of row: RawStatement) throws -> (itemClass: ItemClass?, values: [ItemAttribute: AttributeValue]) {
            let classColumn = ItemIntegrity.firstCoveredColumn + 1
            var values: [ItemAttribute: AttributeValue] = [:]
            for attribute in attributes {
                let column = classColumn + 1 + Int32(attribute.rawValue)
                guard !row.isNull(column) else { continue }
                values[attribute] = attribute.kind == .integer ? .integer(row.integer(column)) : .text(row.text(column))
            }
            return (ItemClass(rawValue: row.text(classColumn)), values)
        }

        /// As a native branch's WHERE clause: an item not made from free-form attributes
        /// of a class the query can name, whose own columns equal every condition's value exactly.
        func matches(_ columns: (itemClass: ItemClass?, values: [ItemAttribute: AttributeValue])?) -> Bool {
            guard let columns, let itemClass = columns.itemClass, let wanted = conditions[itemClass] else { return false }
            if case .text(let group)? = columns.values[.accessGroup], FreeformItem.isFreeform(accessGroup: group) {
                return false
            }
            return wanted.allSatisfy { condition in
                switch (columns.values[condition.attribute], condition.value) {
                case (.text(let own)?, .text(let value)): Array(own.utf8) == Array(value.utf8)
                case (.integer(let own)?, .integer(let value)): own == value
                default: false
                }
            }
        }
    }
}
