import Foundation
import GRDB
import KeywellProtocol

/// Items named by their UUID, for faces that show each item as an object of its own (the Secret
/// Service's items, a gnome-keyring export): every item of a keychain, whether one exists, and
/// the keychain's dates. Work while the keychain is locked: they read no secret and no
/// attribute an integrity MAC covers.
extension KeychainStore {
    /// When the keychain's oldest item was made (the file's time for an empty keychain, and never
    /// later than it), and the last write to the file or its log.
    func keychainDates(of keychain: String) throws(KeychainError) -> (created: Date, modified: Date) {
        let file = try file(at: location(keychain))
        let fileTime = Self.modificationTime(file.location.path) ?? Date(timeIntervalSince1970: 0)
        let modified = max(fileTime, Self.modificationTime(file.location.path + "-wal") ?? fileTime)
        let oldest = try file.database.read { db -> Int64? in
            let rows = try RawStatement(db, sql: "SELECT cdat FROM item ORDER BY id LIMIT 1", values: [])
            defer { rows.finish() }
            return try rows.step() ? rows.integer(0) : nil
        }
        let created = oldest.map { Date(timeIntervalSince1970: Double($0) / 1000) }.map { min($0, fileTime) } ?? fileTime
        return (created, modified)
    }

    private static func modificationTime(_ path: String) -> Date? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }

    /// Every item of the keychain, oldest first.
    func itemIDs(in keychain: String) throws(KeychainError) -> [UUID] {
        let file = try file(at: location(keychain))
        return try file.database.read(Self.allItemIDs)
    }

    /// The keychain's oldest `limit` items (none for a limit below one).
    func itemIDs(in keychain: String, atMost limit: Int) throws(KeychainError) -> [UUID] {
        let file = try file(at: location(keychain))
        return try file.database.read { db in try Self.itemIDs(db, limit: max(0, limit)) }
    }

    private static func allItemIDs(_ db: Database) throws -> [UUID] {
        try itemIDs(db, limit: -1)
    }

    /// A negative limit is SQLite's "no limit".
    private static func itemIDs(_ db: Database, limit: Int) throws -> [UUID] {
        let rows = try RawStatement(db, sql: "SELECT uuid FROM item ORDER BY id LIMIT ?", values: [Int64(limit).databaseValue])
        var ids: [UUID] = []
        while try rows.step() {
            if let uuid = rows.uuid(0) { ids.append(uuid) }
        }
        return ids
    }

    /// Whether the keychain has this item.
    func containsItem(_ id: UUID, in keychain: String) throws(KeychainError) -> Bool {
        let file = try file(at: location(keychain))
        return try file.database.read { db in
            let rows = try RawStatement(db, sql: "SELECT 1 FROM item WHERE uuid = ?", values: [id.data.databaseValue])
            defer { rows.finish() }
            return try rows.step()
        }
    }
}
