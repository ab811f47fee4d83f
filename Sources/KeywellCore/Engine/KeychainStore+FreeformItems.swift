import Foundation
import GRDB
import KeywellProtocol

/// Items made from free-form attributes (`FreeformItem`), and every item seen through them: items
/// by UUID, searches by free-form pairs, secret reads, changes. A face (the Secret Service) says
/// how its attributes derive native ones and which native items its searches match; the items
/// are ordinary keychain items, so the native API sees them, and changes send the same
/// `itemsChanged` events.
///
/// Locked keychains answer searches and attribute reads; secrets and changes need them unlocked
/// (`errSecInteractionNotAllowed`). Unknown items are `errSecItemNotFound`. While unlocked, every
/// item a search, property read or secret read returns is checked against its integrity MAC
/// first (`ItemIntegrity`): a tampered one fails the call with `errSecDecode`.
extension KeychainStore {
    /// Per item class, the conditions on an item's own columns that make an item of that class
    /// (not made from free-form attributes) match a free-form search; a class left out matches
    /// nothing. How a face's attributes read native ones (the Secret Service's
    /// `SecretServiceMapping.nativeConditions`).
    public typealias NativeConditions = [ItemClass: [(attribute: ItemAttribute, value: AttributeValue)]]

    /// The native attributes (label, service, account…) a free-form item's label and free-form
    /// attributes determine; they are set over the item's own.
    public typealias DeriveNative = (_ label: String, _ attributes: [String: String]) -> [ItemAttribute: AttributeValue]

    /// Items whose free-form rows include every pair of `attributes` (exact match), and items not
    /// made from free-form attributes whose own columns meet `native`'s conditions for their class
    /// (a class left out matches none); all items for an empty query. Works while locked.
    /// Returns whether the keychain is locked too, from the same look-up of its file (each
    /// look-up checks the file on disk). Unlocked, the matches are checked against their MACs in
    /// the same snapshot: a search never lists an item that matches only through an edit made on disk.
    func freeformMatches(
        _ attributes: [String: String], native: NativeConditions, in keychain: String
    ) throws(KeychainError) -> (ids: [UUID], locked: Bool) {
        let file = try file(at: location(keychain))
        var mismatches = IndexMismatches()
        defer { warnAboutIndex(of: file, mismatches) }
        // Every match is read again by row id to see that it really holds the pairs
        // (`FreeformSearchCheck`): locked, unchecked; unlocked, against its MAC too.
        guard let integrity = file.integrityKeyIfUnlocked else {
            let ids = try file.database.read { db in
                try Self.verifiedMatches(attributes, native: native, keychain: file.uuid, integrity: nil, db) { mismatches.add($0) }
            }
            return (ids, true)
        }
        let ids = try file.database.snapshot { db in
            try Self.verifiedMatches(attributes, native: native, keychain: file.uuid, integrity: integrity, db) { mismatches.add($0) }
        }
        return (ids, false)
    }

    private static func verifiedMatches(
        _ attributes: [String: String], native: NativeConditions, keychain: UUID, integrity: IntegrityKey?, _ db: Database,
        onIndexMismatch: (Int64) -> Void
    ) throws -> [UUID] {
        let matches = try freeformMatchRows(attributes, native: native, db)
        // No pairs: every item, read from the table without an index; only the MACs to check.
        if attributes.isEmpty, let integrity {
            for start in stride(from: 0, to: matches.count, by: ItemIntegrity.chunk) {
                let part = matches[start..<min(matches.count, start + ItemIntegrity.chunk)]
                try ItemIntegrity.check(rowIDs: part.map(\.rowID), keychain: keychain, key: integrity, db)
            }
        }
        if attributes.isEmpty { return matches.map(\.uuid) }
        return try FreeformSearchCheck.verified(
            matches, query: attributes, native: native, keychain: keychain, integrity: integrity, db, onIndexMismatch: onIndexMismatch)
    }

    /// Items not made from free-form attributes whose own columns meet the conditions, one
    /// branch per item class the query can name.
    static func nativeBranches(_ native: NativeConditions) -> [FreeformAttributeTable.ItemBranch] {
        var branches: [FreeformAttributeTable.ItemBranch] = []
        for itemClass in ItemClass.allCases {
            guard let conditions = native[itemClass] else { continue }
            let prefix = FreeformItem.accessGroupPrefix
            var condition = "class = '\(itemClass.rawValue)' AND substr(ifnull(agrp, ''), 1, \(prefix.utf8.count)) != ?"
            var values: [DatabaseValue] = [prefix.databaseValue]
            for (attribute, value) in conditions {
                if attribute.kind == .integer {
                    let column = MatchColumn(attribute: attribute, form: .number)
                    condition += " AND \(column.name) = ?"
                    values.append(MatchColumn.transform(value, .number))
                    continue
                }
                // The normalised column lets SQLite use the primary-key index; the raw one makes the match exact.
                let column = MatchColumn(attribute: attribute, form: .normalized)
                condition += " AND \(column.name) = ? AND \"\(attribute.name)\" = ?"
                values.append(MatchColumn.transform(value, .normalized))
                if case .text(let text) = value { values.append(text.databaseValue) }
            }
            branches.append(FreeformAttributeTable.ItemBranch(condition: condition, values: values))
        }
        return branches
    }

    /// One item's summary: the attributes that name and date it and its free-form rows. Works
    /// while locked (unchecked); unlocked, checked against the item's MAC.
    func itemSummary(_ id: UUID, in keychain: String) throws(KeychainError) -> ItemSummary {
        let file = try file(at: location(keychain))
        guard let integrity = file.integrityKeyIfUnlocked else {
            return try file.database.read { db in
                let row = try Self.row(id, db)
                return row.summary(freeform: try FreeformAttributeTable.attributes(itemID: row.rowID, db))
            }
        }
        return try file.database.snapshot { db in
            let row = try Self.row(id, db)
            try ItemIntegrity.check(rowIDs: [row.rowID], keychain: file.uuid, key: integrity, db)
            return row.summary(freeform: try FreeformAttributeTable.attributes(itemID: row.rowID, db))
        }
    }


    /// The secrets of many items at once: rows fetched 64 to a statement inside one read
    /// transaction, then one decryption each. Unknown items are left out.
    func secrets(of ids: [UUID], in keychain: String) throws(KeychainError) -> [UUID: ItemSecret] {
        let file = try file(at: location(keychain))
        let (key, integrity) = try file.keys()
        let chunk = 64
        // One transaction: the items' checks and their rows come from the same commit.
        let found = try file.database.snapshot { db -> [(ItemSummaryRow, String?)] in
            var found: [(ItemSummaryRow, String?)] = []
            found.reserveCapacity(ids.count)
            let typeColumn = Int32(3 + ItemSummaryRow.attributes.count + 1)
            for start in stride(from: 0, to: ids.count, by: chunk) {
                let part = ids[start..<min(ids.count, start + chunk)]
                let sql = "SELECT \(ItemSummaryRow.columns), item.secret, type.value FROM item"
                    + " LEFT JOIN item_attribute AS type ON type.item_id = item.id AND type.name = ?"
                    + " WHERE item.uuid IN (" + Array(repeating: "?", count: part.count).joined(separator: ", ") + ")"
                let rows = try RawStatement(db, sql: sql, values: [FreeformItem.contentTypeRow.databaseValue]
                                                + part.map { $0.data.databaseValue })
                var rowIDs: [Int64] = []
                while try rows.step() {
                    let row = try ItemSummaryRow(rows, withSecret: true)
                    found.append((row, rows.isNull(typeColumn) ? nil : rows.text(typeColumn)))
                    rowIDs.append(row.rowID)
                }
                try ItemIntegrity.check(rowIDs: rowIDs, keychain: file.uuid, key: integrity, db)
            }
            return found
        }
        file.markUsed()
        var secrets: [UUID: ItemSecret] = [:]
        secrets.reserveCapacity(found.count)
        for (row, contentType) in found {
            let value = try ItemSealing.open(row.item, keychain: file.uuid, key: key)
            secrets[row.item.uuid] = ItemSecret(value: value, contentType: contentType ?? FreeformItem.defaultContentType)
        }
        return secrets
    }

    // MARK: Writing

    /// Makes a free-form item (one durable commit): an item of `itemClass` (`genp` unless the SSH
    /// agent makes a `keys` item) whose free-form rows are
    /// `attributes`, whose native attributes `derive` gives from its label and attributes, and whose
    /// `type` (nil: none) is kept in a hidden row. With `replace`, a free-form item with exactly the
    /// same attributes gets the new label, secret and type instead, keeping its identity. `times`
    /// carries an item's creation and modification times over from elsewhere (a migration);
    /// without it both are now. Returns the item and whether it replaced one.
    /// `creator`: as in `add` (a new item's access list, `AccessList.forNewItem`); nil, as a
    /// migration passes, makes an item any application may use. A replaced item keeps its list;
    /// `creatorUnidentified`: as in `add` (a caller whose identity is unknown: its item trusts nobody
    /// in an enforcing keychain). `access`, when given, is the new item's list whatever the
    /// keychain's `enforceAccess` says (a sandboxed app's item trusts that app alone); `replacing`
    /// decides, from that list, whether the caller may replace it at all (nil: yes).
    func addFreeformItem(
        in keychain: String, itemClass: ItemClass = .genericPassword, label: String, attributes: [String: String], type: String?,
        secret: ItemSecret, replace: Bool, times: ItemDates? = nil, creator: String? = nil,
        creatorUnidentified: Bool = false, access explicitAccess: AccessList? = nil,
        replacing: (@Sendable (AccessList) -> ItemReplacement)? = nil, derive: DeriveNative
    ) throws(KeychainError) -> (id: UUID, replaced: Bool) {
        let file = try file(at: location(keychain))
        let (key, integrity) = try file.keys()
        let now = Date()
        let milliseconds = AttributeValue.integer(millisecondsSince1970(times?.modified ?? now))
        let created = AttributeValue.integer(millisecondsSince1970(times?.created ?? now))
        // The new item's row (sealed secret, MAC) is built before the write lock is taken: the
        // transaction then holds SQLite's lock only for SQL (docs/performance.md, "A CreateItem's
        // timeline"). A replace that finds its item drops it unused.
        let new = Self.prepareFreeformItem(
            NewFreeformItem(itemClass: itemClass, label: label, attributes: attributes, type: type, secret: secret, created: created,
                            modified: milliseconds),
            at: now, file: file, key: key, integrity: integrity, creator: creator, creatorUnidentified: creatorUnidentified,
            access: explicitAccess, derive: derive)
        let result = try file.database.write { db -> (UUID, Bool) in
            if replace, let existing = try Self.itemWithExactly(attributes, db),
               try Self.mayReplace(existing, keychain: file.uuid, integrity: integrity, replacing, db) {
                var item = try Self.fullItem(rowID: existing, db)
                item.attributes.merge(derive(label, attributes)) { _, derived in derived }
                item.attributes[.modificationDate] = milliseconds
                item.sealedSecret = ItemSealing.seal(secret.value, for: item, keychain: file.uuid, key: key)
                try ItemTable.update(item, db)
                try Self.setHiddenRows(contentType: secret.contentType, type: type, itemID: existing, db)
                try ItemIntegrity.renew(rowID: existing, keychain: file.uuid, key: integrity, db)
                return (item.uuid, true)
            }
            try Self.insert(new, db)
            return (new.item.uuid, false)
        }
        file.markUsed()
        let (id, replaced) = result
        emit(itemChanges: [replaced ? KeychainItemsEvent(keychain: file.location.displayName, changed: [id])
                                    : KeychainItemsEvent(keychain: file.location.displayName, created: [id])])
        return result
    }

    /// Checks the item's MAC (replacing must not vouch for an edit made on disk), then asks
    /// `replacing` about its access list: true to replace it, false to make a new item instead.
    private static func mayReplace(
        _ rowID: Int64, keychain: UUID, integrity: IntegrityKey,
        _ replacing: ((AccessList) -> ItemReplacement)?, _ db: Database
    ) throws -> Bool {
        let lists = try ItemIntegrity.check(rowIDs: [rowID], keychain: keychain, key: integrity, db)
        guard let replacing else { return true }
        switch replacing(lists[rowID] ?? .anyApplication) {
        case .replace: return true
        case .makeNew: return false
        case .refuse:
            throw KeychainError(SecStatus.interactionNotAllowed, detail: "the item it would replace is locked for this application")
        }
    }

    /// Changes the label and/or the free-form attributes (then `derive` gives the native ones
    /// anew). Only free-form items have attributes to change here; other items change theirs
    /// through the native API (`errSecReadOnlyAttr` here).
    func updateFreeformItem(
        _ id: UUID, in keychain: String, label: String?, attributes: [String: String]?, derive: DeriveNative
    ) throws(KeychainError) {
        try changeItem(id, in: keychain) { item, row, db, key, keychainUUID in
            if attributes != nil, !row.isFreeform {
                throw KeychainError(SecStatus.readOnlyAttr, detail: "attributes of items made through the native API change through it")
            }
            let previous = item
            if row.isFreeform {
                let current = try FreeformAttributeTable.attributes(itemID: row.rowID, db)
                    .filter { !FreeformItem.hiddenRows.contains($0.key) }
                let newAttributes = attributes ?? current
                let newLabel = label ?? row.label
                item.attributes.merge(derive(newLabel, newAttributes)) { _, derived in derived }
                if let attributes {
                    try FreeformAttributeTable.deleteVisible(itemID: row.rowID, db)
                    try FreeformAttributeTable.insert(attributes, itemID: row.rowID, db)
                }
            } else if let label {
                item.attributes[.label] = .text(label)
            }
            // The secret is bound to the primary key: seal it again when that changed.
            if item.itemClass.primaryKey.contains(where: { previous.keyValue($0) != item.keyValue($0) }) {
                let plaintext = try ItemSealing.open(previous, keychain: keychainUUID, key: key)
                item.sealedSecret = ItemSealing.seal(plaintext, for: item, keychain: keychainUUID, key: key)
            }
        }
    }

    /// Replaces the item's secret and its content type.
    func setSecret(_ secret: ItemSecret, of id: UUID, in keychain: String) throws(KeychainError) {
        try changeItem(id, in: keychain) { item, row, db, key, keychainUUID in
            item.sealedSecret = ItemSealing.seal(secret.value, for: item, keychain: keychainUUID, key: key)
            try FreeformAttributeTable.set(FreeformItem.contentTypeRow, to: Self.storedContentType(secret.contentType),
                                           itemID: row.rowID, db)
        }
    }

    /// Deletes the item and its free-form rows. Needs the keychain unlocked.
    func deleteItem(_ id: UUID, in keychain: String) throws(KeychainError) {
        let file = try file(at: location(keychain))
        _ = try file.masterKey()
        try file.database.write { db in
            let row = try Self.row(id, db)
            try FreeformAttributeTable.deleteAll(itemID: row.rowID, db)
            try ItemTable.delete(rowID: row.rowID, db)
        }
        file.sessionSecrets.remove([id])
        file.markUsed()
        emit(itemChanges: [KeychainItemsEvent(keychain: file.location.displayName, deleted: [id])])
    }

    /// A new free-form item's rows, inside the caller's write transaction.
    struct NewFreeformItem {
        var itemClass: ItemClass = .genericPassword
        let label: String
        let attributes: [String: String]
        let type: String?
        let secret: ItemSecret
        let created: AttributeValue
        let modified: AttributeValue
    }

    static func insertFreeformItem(
        _ new: NewFreeformItem, at now: Date, file: KeychainFile, key: SecretBytes, integrity: IntegrityKey, creator: String?,
        creatorUnidentified: Bool, access explicitAccess: AccessList?, derive: DeriveNative, _ db: Database
    ) throws -> UUID {
        let prepared = prepareFreeformItem(new, at: now, file: file, key: key, integrity: integrity, creator: creator,
                                           creatorUnidentified: creatorUnidentified, access: explicitAccess, derive: derive)
        try insert(prepared, db)
        return prepared.item.uuid
    }

    /// A new free-form item's row and rows, sealed and with their MAC, ready to insert: nothing
    /// in it depends on the file's contents (its row id is not part of the MAC).
    struct PreparedFreeformItem {
        let item: KeychainItem
        let values: [DatabaseValue]
        let rows: [String: String]
        let access: AccessList
        let mac: Data
    }

    static func insert(_ prepared: PreparedFreeformItem, _ db: Database) throws {
        let rowID = try ItemTable.insert(prepared.item, values: prepared.values, access: prepared.access, mac: prepared.mac, db)
        try FreeformAttributeTable.insert(prepared.rows, itemID: rowID, db)
    }

    static func prepareFreeformItem(
        _ new: NewFreeformItem, at now: Date, file: KeychainFile, key: SecretBytes, integrity: IntegrityKey, creator: String?,
        creatorUnidentified: Bool, access explicitAccess: AccessList?, derive: DeriveNative
    ) -> PreparedFreeformItem {
        let uuid = UUID.timeOrdered(at: now)
        var native: [ItemAttribute: AttributeValue] = [
            .accessGroup: .text(FreeformItem.accessGroup(for: uuid)),
            .accessibility: .text(KeychainItem.defaultAccessibility),
            .creationDate: new.created, .modificationDate: new.modified,
        ]
        native.merge(derive(new.label, new.attributes)) { _, derived in derived }
        var item = KeychainItem(rowID: nil, uuid: uuid, itemClass: new.itemClass, attributes: native, sealedSecret: Data())
        item.sealedSecret = ItemSealing.seal(new.secret.value, for: item, keychain: file.uuid, key: key)
        // A new item has no hidden rows to replace or delete: only those that say something.
        let rows = new.attributes.merging(Self.hiddenRows(contentType: new.secret.contentType, type: new.type)) { _, hidden in hidden }
        let access = AccessList.forNewItem(creator: creator, explicit: explicitAccess, enforceAccess: file.enforcesAccess,
                                            creatorUnidentified: creatorUnidentified)
        // The row's values, built once for both the MAC and the insert.
        let values = ItemTable.attributeAndMatchValues(item)
        let mac = ItemIntegrity.mac(for: item, values: values, freeform: rows, access: access, keychain: file.uuid, key: integrity)
        return PreparedFreeformItem(item: item, values: values, rows: rows, access: access, mac: mac)
    }

    // MARK: Helpers

    /// Loads the whole item in a write transaction, checks it against its MAC (a change must not
    /// vouch for an edit made on disk), lets `change` alter it, stores it with a new `mdat` and
    /// a new MAC. Needs the keychain unlocked.
    private func changeItem(
        _ id: UUID, in keychain: String,
        _ change: (inout KeychainItem, ItemSummaryRow, Database, SecretBytes, UUID) throws -> Void
    ) throws(KeychainError) {
        let file = try file(at: location(keychain))
        let (key, integrity) = try file.keys()
        let now = Date()
        let changed = try file.database.write { db in
            let row = try Self.row(id, db)
            try ItemIntegrity.check(rowIDs: [row.rowID], keychain: file.uuid, key: integrity, db)
            var item = try Self.fullItem(rowID: row.rowID, db)
            try change(&item, row, db, key, file.uuid)
            item.attributes[.modificationDate] = .integer(millisecondsSince1970(now))
            try ItemTable.update(item, db)
            try ItemIntegrity.renew(rowID: row.rowID, keychain: file.uuid, key: integrity, db)
            return item
        }
        // A new secret reaches an AfterFirstUnlock item's session copy too.
        file.refreshSessionCopies(of: [changed])
        file.markUsed()
        emit(itemChanges: [KeychainItemsEvent(keychain: file.location.displayName, changed: [id])])
    }

    /// The item's row without its secret (property reads and changes).
    static func row(_ id: UUID, _ db: Database) throws -> ItemSummaryRow {
        let rows = try RawStatement(db, sql: rowSQL, values: [id.data.databaseValue])
        guard try rows.step() else { throw KeychainError(SecStatus.itemNotFound) }
        defer { rows.finish() }
        return try ItemSummaryRow(rows, withSecret: false)
    }

    /// Built once: every property read runs it.
    private static let rowSQL = "SELECT \(ItemSummaryRow.columns) FROM item WHERE item.uuid = ?"

    /// Every attribute of the item, for a full-row update.
    private static func fullItem(rowID: Int64, _ db: Database) throws -> KeychainItem {
        let rows = try RawStatement(db, sql: "SELECT uuid FROM item WHERE id = ?", values: [rowID.databaseValue])
        guard try rows.step(), let uuid = rows.uuid(0) else { throw KeychainError(SecStatus.itemNotFound) }
        rows.finish()
        guard var item = try ItemTable.fetch(ItemFilter(itemClass: nil, itemUUID: uuid), limit: .one, db).first else {
            throw KeychainError(SecStatus.itemNotFound)
        }
        item.rowID = rowID
        return item
    }

    /// The first free-form item whose attributes are exactly `attributes`,
    /// leaving out the rows of `excluded` (what an import added itself).
    static func itemWithExactly(_ attributes: [String: String], excluding excluded: Set<Int64> = [], _ db: Database) throws -> Int64? {
        let prefix = FreeformItem.accessGroupPrefix
        let hidden = FreeformItem.hiddenRows
        if attributes.isEmpty {
            let rows = try RawStatement(db, sql: """
                SELECT id FROM item WHERE class = 'genp' AND substr(ifnull(agrp, ''), 1, \(prefix.utf8.count)) = ?
                AND NOT EXISTS (SELECT 1 FROM item_attribute WHERE item_id = item.id AND name NOT IN (?, ?))
                ORDER BY id
                """, values: [prefix.databaseValue, hidden[0].databaseValue, hidden[1].databaseValue])
            defer { rows.finish() }
            while try rows.step() {
                if !excluded.contains(rows.integer(0)) { return rows.integer(0) }
            }
            return nil
        }
        for candidate in try FreeformAttributeTable.matchingItems(attributes, db) where !excluded.contains(candidate.rowID) {
            let rows = try FreeformAttributeTable.attributes(itemID: candidate.rowID, db)
            // Compared in full, not just counted: the index that found it may disagree with its rows.
            let visible = rows.filter { !hidden.contains($0.key) }
            guard visible == attributes else { continue }
            let group = try RawStatement(db, sql: "SELECT agrp FROM item WHERE id = ?", values: [candidate.rowID.databaseValue])
            defer { group.finish() }
            if try group.step(), FreeformItem.isFreeform(accessGroup: group.text(0)) {
                return candidate.rowID
            }
        }
        return nil
    }

    /// The hidden rows an item needs: none for the default content type and no type. Their names
    /// start with NUL, which no D-Bus string holds, so they never meet an attribute's.
    private static func hiddenRows(contentType: String, type: String?) -> [String: String] {
        var rows: [String: String] = [:]
        rows[FreeformItem.contentTypeRow] = storedContentType(contentType)
        rows[FreeformItem.typeRow] = type
        return rows
    }

    /// What the content-type row holds: nothing for the default type (no row).
    private static func storedContentType(_ contentType: String) -> String? {
        contentType == FreeformItem.defaultContentType ? nil : contentType
    }

    /// An existing item's hidden rows made to match: written, or deleted when no longer needed.
    private static func setHiddenRows(contentType: String, type: String?, itemID: Int64, _ db: Database) throws {
        let needed = hiddenRows(contentType: contentType, type: type)
        for name in FreeformItem.hiddenRows {
            try FreeformAttributeTable.set(name, to: needed[name], itemID: itemID, db)
        }
    }
}
