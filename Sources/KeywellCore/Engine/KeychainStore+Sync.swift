import Foundation
import GRDB
import KeywellProtocol

/// One synced item's version as the keychain keeps it (`sync_item`): what the sync module needs
/// to tell local changes from merged ones and to merge. `identity` is the sync module's own
/// encoding of the item's class and primary key (for deletions, whose item is gone).
public struct SyncItemState: Sendable, Equatable {
    public var tag: Data
    /// A hash of the item's MAC and sealed secret when this version was written or merged: a
    /// local change (attributes, access list, secret) changes it. Nil for a deletion.
    public var fingerprint: Data?
    public var modified: Int64
    public var machine: Data
    public var baseModified: Int64?
    public var baseMachine: Data?
    public var deleted: Bool
    public var identity: Data

    public init(tag: Data, fingerprint: Data?, modified: Int64, machine: Data, baseModified: Int64?, baseMachine: Data?,
                deleted: Bool, identity: Data) {
        self.tag = tag
        self.fingerprint = fingerprint
        self.modified = modified
        self.machine = machine
        self.baseModified = baseModified
        self.baseMachine = baseMachine
        self.deleted = deleted
        self.identity = identity
    }
}

/// An item that may leave this machine, as the sync module's diff sees it: no secret.
public struct SyncLocalItem: Sendable {
    public var uuid: UUID
    public var itemClass: ItemClass
    public var attributes: [ItemAttribute: AttributeValue]
    public var fingerprint: Data
}

/// An item whole, as a sync record carries it: its id, class, every native attribute, its
/// free-form rows (Secret Service attributes and schema), its access list and its secret.
public struct SyncItem: Sendable, Equatable {
    public var uuid: UUID
    public var itemClass: ItemClass
    public var attributes: [ItemAttribute: AttributeValue]
    public var freeform: [String: String]
    public var access: AccessList
    /// The secret in the clear: storage wiped on release (SecretWipe).
    public var secret: Data

    public init(uuid: UUID, itemClass: ItemClass, attributes: [ItemAttribute: AttributeValue], freeform: [String: String],
                access: AccessList, secret: Data) {
        self.uuid = uuid
        self.itemClass = itemClass
        self.attributes = attributes
        self.freeform = freeform
        self.access = access
        self.secret = secret
    }
}

/// A losing version a merge kept (`sync conflicts`).
public struct SyncConflictEntry: Sendable, Equatable {
    public var id: Int64
    public var label: String
    public var service: String
    public var account: String
    public var modified: Int64
    public var machine: String

    public init(id: Int64 = 0, label: String, service: String, account: String, modified: Int64, machine: String) {
        self.id = id
        self.label = label
        self.service = service
        self.account = account
        self.modified = modified
        self.machine = machine
    }
}

/// What one merge writes, in one transaction.
public struct SyncApplication: Sendable {
    public var upserts: [(item: SyncItem, state: SyncItemState)] = []
    public var deletions: [(itemClass: ItemClass, key: [AttributeValue], state: SyncItemState)] = []
    /// Other version rows (local changes written into the folder).
    public var states: [SyncItemState] = []
    public var conflicts: [(entry: SyncConflictEntry, secret: Data)] = []
    /// Settings to set; nil removes one.
    public var settings: [String: Data?] = [:]

    public init() {}
}

/// The keychain side of sync (docs/sync.md, "What the keychain keeps"): the tables
/// `KeychainSchema.syncTables` made on `sync enable` or `join`, read and written for the sync
/// module, which alone knows what records are.
extension KeychainStore {
    /// The keychain's sync settings; empty when sync was never enabled. Works while locked.
    func syncSettings(_ keychain: String) throws(KeychainError) -> [String: Data] {
        let file = try file(at: location(keychain))
        return try file.database.read { db in
            guard try Self.hasSyncTables(db) else { return [:] }
            var settings: [String: Data] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, value FROM sync_setting") { settings[row[0]] = row[1] }
            return settings
        }
    }

    /// The version of every item sync knows, by tag.
    func syncStates(_ keychain: String) throws(KeychainError) -> [Data: SyncItemState] {
        let file = try file(at: location(keychain))
        return try file.database.read { db in
            guard try Self.hasSyncTables(db) else { return [:] }
            var states: [Data: SyncItemState] = [:]
            let rows = try Row.fetchCursor(
                db, sql: "SELECT tag, fingerprint, modified, machine, base_modified, base_machine, deleted, identity FROM sync_item")
            while let row = try rows.next() {
                let state = SyncItemState(tag: row[0], fingerprint: row[1], modified: row[2], machine: row[3], baseModified: row[4],
                                          baseMachine: row[5], deleted: row[6], identity: row[7])
                states[state.tag] = state
            }
            return states
        }
    }

    /// Every item that may leave this machine (not `ThisDeviceOnly`), without secrets.
    func syncCandidates(_ keychain: String) throws(KeychainError) -> [SyncLocalItem] {
        let file = try file(at: location(keychain))
        return try file.database.read { db in
            var fingerprints: [Int64: Data] = [:]
            let rows = try Row.fetchCursor(db, sql: "SELECT id, mac, secret FROM item")
            while let row = try rows.next() {
                fingerprints[row[0]] = Self.fingerprint(mac: row[1] ?? Data(), sealedSecret: row[2] ?? Data())
            }
            return try ItemTable.fetch(ItemFilter(itemClass: nil), limit: .all, db).compactMap { item in
                guard !item.accessibility.isThisDeviceOnly, let rowID = item.rowID, let fingerprint = fingerprints[rowID] else { return nil }
                return SyncLocalItem(uuid: item.uuid, itemClass: item.itemClass, attributes: item.attributes, fingerprint: fingerprint)
            }
        }
    }

    /// The items `uuids` whole, checked against their MACs, each with its fingerprint (as
    /// `SyncLocalItem.fingerprint`) read in the same snapshot; the keychain must be unlocked.
    /// Items gone since are left out.
    func syncItems(_ keychain: String, uuids: [UUID]) throws(KeychainError) -> [(item: SyncItem, fingerprint: Data)] {
        let file = try file(at: location(keychain))
        let (key, integrity) = try file.keys()
        let wanted = Set(uuids)
        let found = try file.database.snapshot { db in
            let items = try ItemTable.fetch(ItemFilter(itemClass: nil), limit: .all, db).filter { wanted.contains($0.uuid) }
            let lists = try ItemIntegrity.check(items, keychain: file.uuid, key: integrity, path: file.location.path, db)
            return try items.map { item in
                let mac = try Data.fetchOne(db, sql: "SELECT mac FROM item WHERE id = ?", arguments: [item.rowID!]) ?? Data()
                return (item, try FreeformAttributeTable.attributes(itemID: item.rowID!, db), lists[item.rowID!] ?? .anyApplication,
                        Self.fingerprint(mac: mac, sealedSecret: item.sealedSecret))
            }
        }
        var result: [(item: SyncItem, fingerprint: Data)] = []
        for (item, freeform, access, fingerprint) in found {
            let whole = SyncItem(uuid: item.uuid, itemClass: item.itemClass, attributes: item.attributes, freeform: freeform,
                                 access: access, secret: try ItemSealing.open(item, keychain: file.uuid, key: key))
            result.append((whole, fingerprint))
        }
        file.markUsed()
        return result
    }

    /// Writes `application` in one transaction: merged items in place of the ones with their
    /// primary keys, deletions, version rows, kept conflicts and settings. Makes the sync tables
    /// when missing. The keychain must be unlocked. Returns how many items it changed.
    @discardableResult
    func applySync(_ keychain: String, _ application: SyncApplication) throws(KeychainError) -> Int {
        let file = try file(at: location(keychain))
        let (key, integrity) = try file.keys()
        let conflictKey = Self.conflictKey(key)
        let changed = try file.database.write { db in
            for statement in KeychainSchema.syncTables { try db.execute(sql: statement) }
            var changed = 0
            for (incoming, state) in application.upserts {
                var state = state
                if let existing = try Self.rowID(of: incoming.itemClass, key: incoming.itemClass.primaryKey.map {
                    incoming.attributes[$0] ?? $0.missingKeyValue
                }, db) {
                    try FreeformAttributeTable.deleteAll(itemID: existing, db)
                    try ItemTable.delete(rowID: existing, db)
                }
                var uuid = incoming.uuid
                if try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM item WHERE uuid = ?"), arguments: [uuid.data]) != nil {
                    uuid = UUID.timeOrdered(at: Date())
                }
                var item = KeychainItem(rowID: nil, uuid: uuid, itemClass: incoming.itemClass, attributes: incoming.attributes,
                                        sealedSecret: Data())
                item.sealedSecret = ItemSealing.seal(incoming.secret, for: item, keychain: file.uuid, key: key)
                let mac = ItemIntegrity.mac(for: item, freeform: incoming.freeform, access: incoming.access, keychain: file.uuid,
                                            key: integrity)
                let rowID = try ItemTable.insert(item, access: incoming.access, mac: mac, db)
                try FreeformAttributeTable.insert(incoming.freeform, itemID: rowID, db)
                state.fingerprint = Self.fingerprint(mac: mac, sealedSecret: item.sealedSecret)
                try Self.write(state, db)
                changed += 1
            }
            for (itemClass, primaryKey, state) in application.deletions {
                if let existing = try Self.rowID(of: itemClass, key: primaryKey, db) {
                    try FreeformAttributeTable.deleteAll(itemID: existing, db)
                    try ItemTable.delete(rowID: existing, db)
                    changed += 1
                }
                try Self.write(state, db)
            }
            for state in application.states { try Self.write(state, db) }
            for (entry, secret) in application.conflicts {
                try db.execute(
                    sql: "INSERT INTO sync_conflict (label, service, account, modified, machine, secret) VALUES (?, ?, ?, ?, ?, X'')",
                    arguments: [entry.label, entry.service, entry.account, entry.modified, entry.machine])
                let id = db.lastInsertedRowID
                try db.execute(sql: "UPDATE sync_conflict SET secret = ? WHERE id = ?",
                               arguments: [Sodium.seal(secret, key: conflictKey, associatedData: Self.conflictData(file.uuid, id)), id])
            }
            if !application.conflicts.isEmpty {
                try db.execute(sql: "DELETE FROM sync_conflict WHERE id NOT IN (SELECT id FROM sync_conflict ORDER BY id DESC LIMIT ?)",
                               arguments: [Self.syncConflictsKept])
            }
            for (name, value) in application.settings {
                if let value {
                    try db.execute(sql: "INSERT OR REPLACE INTO sync_setting (name, value) VALUES (?, ?)", arguments: [name, value])
                } else {
                    try db.execute(sql: "DELETE FROM sync_setting WHERE name = ?", arguments: [name])
                }
            }
            return changed
        }
        file.markUsed()
        if changed > 0 {
            if application.upserts.contains(where: { Self.survivesLock($0.item) }) || !file.sessionSecrets.isEmpty {
                file.keepSessionCopies(logger: logger)
            }
            emit([.itemsChanged(file.location.displayName)])
        }
        return changed
    }

    /// Forgets sync: settings and versions go, kept conflicts stay (`sync disable`).
    func clearSyncState(_ keychain: String) throws(KeychainError) {
        let file = try file(at: location(keychain))
        try file.database.write { db in
            guard try Self.hasSyncTables(db) else { return }
            try db.execute(sql: "DELETE FROM sync_setting")
            try db.execute(sql: "DELETE FROM sync_item")
        }
    }

    /// `bytes` sealed under a subkey of the keychain's master key (the sync key, kept as a
    /// setting); the keychain must be unlocked.
    func sealForSync(_ keychain: String, _ bytes: SecretBytes) throws(KeychainError) -> Data {
        let file = try file(at: location(keychain))
        let key = Self.syncKeyKey(try file.masterKey())
        return bytes.withUnsafeBytes { Sodium.seal($0, key: key, associatedData: Self.syncKeyData(file.uuid)) }
    }

    func openForSync(_ keychain: String, _ sealed: Data) throws(KeychainError) -> SecretBytes {
        let file = try file(at: location(keychain))
        let key = Self.syncKeyKey(try file.masterKey())
        guard let length = Sodium.openedLength(of: sealed) else { throw KeychainError(SecStatus.decode, detail: "the sync key is damaged") }
        let opened = SecretBytes(count: length)
        let ok = opened.withUnsafeMutableBytes { Sodium.open(sealed, key: key, associatedData: Self.syncKeyData(file.uuid), into: $0) }
        guard ok else { throw KeychainError(SecStatus.decode, detail: "the sync key fails to authenticate") }
        return opened
    }

    /// The losing versions kept, oldest first. Works while locked.
    func syncConflicts(_ keychain: String) throws(KeychainError) -> [SyncConflictEntry] {
        let file = try file(at: location(keychain))
        return try file.database.read { db in
            guard try Self.hasSyncTables(db) else { return [] }
            return try Row.fetchAll(db, sql: "SELECT id, label, service, account, modified, machine FROM sync_conflict ORDER BY id").map {
                SyncConflictEntry(id: $0[0], label: $0[1], service: $0[2], account: $0[3], modified: $0[4], machine: $0[5])
            }
        }
    }

    /// A kept version's secret; the keychain must be unlocked.
    func syncConflictSecret(_ keychain: String, id: Int64) throws(KeychainError) -> Data {
        let file = try file(at: location(keychain))
        let key = Self.conflictKey(try file.masterKey())
        let sealed = try file.database.read { db -> Data? in
            guard try Self.hasSyncTables(db) else { return nil }
            return try Data.fetchOne(db, sql: "SELECT secret FROM sync_conflict WHERE id = ?", arguments: [id])
        }
        guard let sealed else { throw KeychainError(SecStatus.itemNotFound, detail: "no kept version \(id)") }
        file.markUsed()
        return try Sodium.open(sealed, key: key, associatedData: Self.conflictData(file.uuid, id))
    }

    /// Losing versions a keychain keeps; the oldest go first.
    static let syncConflictsKept = 10_000

    private static func hasSyncTables(_ db: Database) throws -> Bool {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'sync_item'") == 1
    }

    static func fingerprint(mac: Data, sealedSecret: Data) -> Data { Sodium.hash([mac, sealedSecret]) }

    private static func survivesLock(_ item: SyncItem) -> Bool {
        guard case .text(let text)? = item.attributes[.accessibility] else { return false }
        return Accessibility.stored(text).survivesAutomaticLock
    }

    private static func syncKeyKey(_ master: SecretBytes) -> SecretBytes { Sodium.deriveSubkey(of: master, id: 1, context: "kwsynckc") }
    private static func conflictKey(_ master: SecretBytes) -> SecretBytes { Sodium.deriveSubkey(of: master, id: 2, context: "kwsynckc") }
    private static func syncKeyData(_ keychain: UUID) -> Data { Data("keywell sync key v1\0".utf8) + keychain.data }
    private static func conflictData(_ keychain: UUID, _ id: Int64) -> Data {
        Data("keywell sync conflict v1\0".utf8) + keychain.data + withUnsafeBytes(of: id.bigEndian) { Data($0) }
    }

    private static func write(_ state: SyncItemState, _ db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO sync_item (tag, fingerprint, modified, machine, base_modified, base_machine, deleted, identity)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [state.tag, state.fingerprint, state.modified, state.machine, state.baseModified, state.baseMachine,
                        state.deleted, state.identity])
    }

    /// The item of `itemClass` with this primary key, through the class's unique index.
    private static func rowID(of itemClass: ItemClass, key: [AttributeValue], _ db: Database) throws -> Int64? {
        var probe = KeychainItem(rowID: nil, uuid: UUID(), itemClass: itemClass, attributes: [:], sealedSecret: Data())
        for (attribute, value) in zip(itemClass.primaryKey, key) { probe.attributes[attribute] = value }
        let columns = itemClass.primaryKey.map { MatchColumn(attribute: $0, form: $0.kind == .integer ? .number : .normalized) }
        let sql = "SELECT id FROM item WHERE class = '\(itemClass.rawValue)' AND " + columns.map { "\($0.name) = ?" }.joined(separator: " AND ")
        let rows = try RawStatement(db, sql: sql, values: columns.map { $0.value(for: probe) })
        defer { rows.finish() }
        return try rows.step() ? rows.integer(0) : nil
    }
}
