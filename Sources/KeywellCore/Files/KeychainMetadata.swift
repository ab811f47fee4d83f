import GRDB

/// Rows of `keychain_metadata (name, value)`: facts about a keychain that are not secret and are
/// readable while it is locked (its label, how its password relates to the login password, how it
/// was made). The table is made on first write; a file without it has none of them.
enum KeychainMetadata {
    static let label = "label"
    /// `LoginPasswordLink` of the login keychain (docs/login-unlock.md, "When the keychain's
    /// password is not the login password").
    static let loginPasswordLink = "loginPassword"
    /// Set on a keychain the Secret Service made for a first store before `login` existed
    /// (docs/secret-service.md, "First store").
    static let madeFor = "madeFor"
    static let firstStore = "first store"

    static func read(_ name: String, _ db: Database) throws -> String? {
        // Asked of SQLite each time: GRDB's `tableExists` caches the schema per connection,
        // and the table may have been made since through the writing one.
        let tables = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'keychain_metadata'")
        guard tables == 1 else { return nil }
        return try String.fetchOne(db, sql: "SELECT value FROM keychain_metadata WHERE name = ?", arguments: [name])
    }

    /// Sets the row, or removes it for nil.
    static func write(_ name: String, _ value: String?, _ db: Database) throws {
        try db.execute(sql: KeychainSchema.labelTable)
        guard let value else {
            let present = try read(name, db) != nil
            try db.execute(sql: "DELETE FROM keychain_metadata WHERE name = ?", arguments: [name])
            try UnexpectedChangeCount.check(db, "removing the keychain's \(name)", expected: present ? 1 : 0)
            return
        }
        try db.execute(sql: "INSERT OR REPLACE INTO keychain_metadata (name, value) VALUES (?, ?)", arguments: [name, value])
        try UnexpectedChangeCount.check(db, "setting the keychain's \(name)")
    }
}
