import GRDB
import KeywellProtocol

/// A keychain file holds Keywell's own tables and indexes and nothing else (docs/file-format.md,
/// "What a keychain file may hold"): a trigger or a view would be SQL that runs inside keywelld
/// whenever it reads or writes the file, and an extra index or a changed table definition is not
/// something Keywell wrote. Checked on every connection to a keychain file, before anything else
/// is read from it, and again by each write after the schema changed (`SchemaVersionGuard`).
///
/// The accepted schemas are not a second copy of `KeychainSchema`: they are what SQLite records
/// when `KeychainSchema`'s statements run, made once per process in in-memory databases.
enum KeychainSchemaCheck {
    /// One row of `sqlite_master`, its SQL normalised (`normalized`).
    struct SchemaObject: Hashable, Sendable {
        let type: String
        let name: String
        let table: String
        let sql: String?
    }

    /// Refuses `db` unless its `sqlite_master` is one that Keywell writes, in some format it reads.
    static func check(_ db: Database, path: String) throws(KeychainError) {
        let found: [SchemaObject]
        do {
            found = try objects(db)
        } catch {
            throw KeychainError.from(error, path: path)
        }
        guard found.contains(where: { $0.type == "table" && $0.name == "keychain" }) else {
            throw KeychainError(SecStatus.invalidKeychain, detail: "\(path) is not a Keywell keychain")
        }
        let accepted = try acceptedSchemas.get()
        let foundSet = Set(found)
        if foundSet.count == found.count, accepted.contains(foundSet) { return }
        throw refusal(of: found, accepted: accepted, path: path)
    }

    /// The schema's rows, in the order SQLite keeps them. A row SQLite would not have written (a
    /// name or type that is not text) is refused as it is found.
    static func objects(_ db: Database) throws -> [SchemaObject] {
        let rows = try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master")
        return try rows.map { row in
            func text(_ index: Int) throws -> String? {
                let value: DatabaseValue = row[index]
                if value.isNull { return nil }
                guard let text = String.fromDatabaseValue(value) else {
                    throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "a schema row holds something other than text")
                }
                return text
            }
            guard let type = try text(0), let name = try text(1), let table = try text(2) else {
                throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "a schema row lacks its type or name")
            }
            return SchemaObject(type: type, name: name, table: table, sql: try text(3).map(normalized))
        }
    }

    /// The first object that makes `found` unacceptable, named with the file.
    private static func refusal(
        of found: [SchemaObject], accepted: [Set<SchemaObject>], path: String
    ) -> KeychainError {
        let known = accepted.reduce(into: Set<SchemaObject>()) { $0.formUnion($1) }
        if let foreign = found.first(where: { !known.contains($0) }) {
            let object = "\(foreign.type) \"\(foreign.name)\" in \(path)"
            let redefined = known.contains { $0.type == foreign.type && $0.name == foreign.name }
            return KeychainError(
                SecStatus.invalidKeychain,
                detail: redefined
                    ? "\(object) is not defined as in a Keywell keychain file: the file was altered outside Keywell"
                    : "\(object) is not part of a Keywell keychain file: the file was altered outside Keywell")
        }
        // Only Keywell's own objects, but in no combination Keywell writes: some are missing.
        let names = Set(found.map(\.name))
        let nameSets = accepted.map { Set($0.map(\.name)) }
        let required = nameSets.dropFirst().reduce(nameSets.first ?? []) { $0.intersection($1) }
        let absent = known.filter { required.contains($0.name) && !names.contains($0.name) }
        if let missing = absent.min(by: { $0.name < $1.name }) {
            return KeychainError(
                SecStatus.invalidKeychain,
                detail: "\(path) lacks the \(missing.type) \"\(missing.name)\" of a Keywell keychain file: the file was altered outside Keywell")
        }
        return KeychainError(
            SecStatus.invalidKeychain,
            detail: "the tables of \(path) match no Keywell keychain format: the file was altered outside Keywell")
    }

    /// SQL as SQLite stored it, with whitespace made uniform: SQLite keeps a CREATE statement's
    /// text as it was typed, and appends `, <column>` to it for ADD COLUMN, so the same table
    /// reads differently in a file made new and in one upgraded. Runs of whitespace become one
    /// space, and none is kept beside `(`, `)` or `,`; quoted text and names are left as they are.
    static func normalized(_ sql: String) -> String {
        let punctuation: Set<Character> = ["(", ")", ","]
        let closingQuote: [Character: Character] = ["'": "'", "\"": "\"", "`": "`", "[": "]"]
        var result = ""
        var quote: Character?
        var pendingSpace = false
        for character in sql {
            if let closing = quote {
                result.append(character)
                if character == closing { quote = nil }
                continue
            }
            if character.isWhitespace {
                pendingSpace = !result.isEmpty
                continue
            }
            if pendingSpace, let last = result.last, !punctuation.contains(last), !punctuation.contains(character) {
                result.append(" ")
            }
            pendingSpace = false
            result.append(character)
            quote = closingQuote[character]
        }
        return result
    }

    /// Every schema a Keywell writes or wrote: each format as made, each state its upgrades pass
    /// through, each with the label table or without it, and with the sync tables or without them.
    static let acceptedSchemas: Result<[Set<SchemaObject>], KeychainError> = Result { () throws(KeychainError) in
        try replayHistories()
    }

    private static func replayHistories() throws(KeychainError) -> [Set<SchemaObject>] {
        let version2 = KeychainSchema.addedInVersion2, version3 = KeychainSchema.addedInVersion3
        let screenLock = [KeychainSchema.screenLockColumn]
        // The columns beyond format 1 a file was made with, then the upgrades it went through.
        // The screen-lock column comes with the first header written after it existed: before
        // or after the upgrade to format 3, depending on the Keywell that wrote it.
        let histories: [(made: [KeychainSchema.AddedColumn], upgrades: [[KeychainSchema.AddedColumn]])] = [
            ([], [version2, screenLock, version3]),
            ([], [version2, version3, screenLock]),
            (version2, [screenLock, version3]),
            (version2, [version3, screenLock]),
            (version2 + screenLock, [version3]),
            (version2 + version3 + screenLock, []),
        ]
        do {
            // One in-memory database, each use in a transaction rolled back (SQLite's schema
            // changes are transactional), then closed and kept (`RetiredConnections`) rather
            // than freed. GRDB's `erase()` would free a connection of its own.
            let scratchQueue = try DatabaseQueue()
            defer { try? RetiredConnections.close(scratchQueue) }
            func scratch<T>(_ body: (Database) throws -> T) throws -> T {
                try scratchQueue.inDatabase { db in
                    var result: T?
                    try db.inTransaction {
                        result = try body(db)
                        return .rollback
                    }
                    return result!
                }
            }
            let labelObjects = try scratch { db in
                try db.execute(sql: KeychainSchema.labelTable)
                return try objects(db)
            }
            let syncObjects = try scratch { db in
                for statement in KeychainSchema.syncTables { try db.execute(sql: statement) }
                return try objects(db)
            }
            var schemas: [Set<SchemaObject>] = []
            for history in histories {
                try scratch { db in
                    for statement in KeychainSchema.statements(including: history.made) { try db.execute(sql: statement) }
                    var states = [Set(try objects(db))]
                    for upgrade in history.upgrades {
                        for column in upgrade { try db.execute(sql: column.alterStatement) }
                        states.append(Set(try objects(db)))
                    }
                    for state in states {
                        let variants = [state, state.union(labelObjects), state.union(syncObjects), state.union(labelObjects).union(syncObjects)]
                        for schema in variants where !schemas.contains(schema) {
                            schemas.append(schema)
                        }
                    }
                }
            }
            return schemas
        } catch {
            throw KeychainError(SecStatus.io, detail: "cannot build the schema of a keychain file: \(error)")
        }
    }
}
