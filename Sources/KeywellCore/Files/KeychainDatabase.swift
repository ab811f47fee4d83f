import CSQLiteHardening
import Foundation
import GRDB
import GRDBSQLite
import KeywellProtocol
import KeywellSystem
import Synchronization

/// One keychain file's SQLite database. WAL with `synchronous=FULL`, so a write is on disk before
/// it is acknowledged; write transactions are IMMEDIATE with a busy timeout, so processes sharing
/// the file wait for each other instead of failing or losing writes.
///
/// Two connections: one for writes, one for reads, so a lookup never waits behind a write's
/// commit (WAL lets readers go on meanwhile) — the daemon answers lookups on its D-Bus I/O
/// thread, where such a wait would hold up every caller. Each is a plain serial queue: GRDB's
/// reader pool and its per-read schema checks dominated lookups. Other processes still read
/// and write concurrently through WAL.
///
/// Every connection is hardened and timed (`ConnectionHardening`, `SQLTimeLimit`), and one to an
/// existing file checks its schema before anything else is read (`KeychainSchemaCheck`;
/// docs/file-format.md, "What a keychain file may hold").
final class KeychainDatabase: Sendable {
    let path: String
    private let queue: DatabaseQueue
    private let reader: DatabaseQueue
    private let writeLimit: SQLTimeLimit
    private let readLimit: SQLTimeLimit
    /// The `schema_version` the writing connection last found acceptable; 0 before its first write.
    private let checkedSchemaVersion = Atomic<Int32>(0)
    /// Moves on after every write transaction of this process, committed or not (`writeCount`).
    private let finishedWrites = Atomic<UInt64>(0)
    /// What the last `PRAGMA data_version` of the reading connection found, with the WAL index's
    /// header as it was just before it (`dataVersion`).
    private let lastVersion = Protected(VersionSeen())

    private static let busyTimeout: TimeInterval = 10

    /// For connections to the keychain file at `path` (its schema checked at open), or with
    /// `path` nil to a file being made.
    static func configuration(checking path: String?, timeLimit: SQLTimeLimit) -> Configuration {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.label = "keywell.keychain"
        configuration.journalMode = .wal
        // No memory-mapped I/O (SQLite's default): mapped pages count in the daemon's resident
        // memory, and random lookups over a 100k-item keychain touch tens of MiB of them. With
        // pread a page lives in the kernel's cache instead; a lookup costs ~10 µs more.
        configuration.prepareDatabase { db in
            try ConnectionHardening.harden(db, timeLimit: timeLimit)
            if let path { try timeLimit.timing { () throws(KeychainError) in try KeychainSchemaCheck.check(db, path: path) } }
            try keepCompanionFiles(db)
        }
        return configuration
    }

    /// The -wal size SQLite trims back to after a checkpoint, and to zero when the last
    /// connection closes: above the ~4 MiB its automatic checkpoints let the file reach, so the
    /// trimming costs nothing in normal use.
    static let walSizeLimit = 8 << 20

    /// SQLite removes -wal and -shm when the last connection to a WAL database closes, and makes
    /// them again at the next open: the names would be free meanwhile for another user to take in
    /// a shared folder. Persistent WAL keeps both files (the -wal emptied, through
    /// `journal_size_limit`), so once `KeychainFileSet` has claimed them they stay the user's;
    /// each open still checks all four (docs/file-format.md).
    private static func keepCompanionFiles(_ db: Database) throws {
        var persist: Int32 = 1
        let status = sqlite3_file_control(db.sqliteConnection, "main", SQLITE_FCNTL_PERSIST_WAL, &persist)
        guard status == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: status), message: "cannot keep the -wal and -shm files")
        }
        try db.execute(sql: "PRAGMA journal_size_limit = \(walSizeLimit)")
    }

    static func readingConfiguration(checking path: String, timeLimit: SQLTimeLimit) -> Configuration {
        var configuration = Self.configuration(checking: path, timeLimit: timeLimit)
        // Not SQLITE_OPEN_READONLY: a read-only connection maps the WAL index read-only and then
        // rebuilds it from the whole WAL file in every transaction (lookups 3× slower). This one
        // only ever reads; the file is already in WAL mode.
        configuration.journalMode = .default
        configuration.label = "keywell.keychain.reads"
        return configuration
    }

    /// Opens an existing keychain file. A file that is not a keychain is refused before the
    /// connection switches it to WAL, so a wrong path never alters someone else's database; the
    /// four files are checked (and the companions claimed) before SQLite opens any of them.
    /// `timeLimit` bounds each read and each write transaction.
    init(opening path: String, timeLimit: Duration = ServiceLimits.callDeadline) throws(KeychainError) {
        self.path = path
        writeLimit = SQLTimeLimit(timeLimit)
        readLimit = SQLTimeLimit(timeLimit)
        _ = try KeychainFileSet.prepareForOpening(path)
        do {
            var probing = Self.configuration(checking: path, timeLimit: readLimit)
            probing.journalMode = .default
            let probe = try DatabaseQueue(path: path, configuration: probing)
            _ = try probe.read { db throws(KeychainError) in try Self.readHeader(db, path: path) }
            try RetiredConnections.close(probe)
            queue = try DatabaseQueue(path: path, configuration: Self.configuration(checking: path, timeLimit: writeLimit))
            // GRDB sets NORMAL for WAL; FULL also syncs the WAL at every commit.
            try queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
            reader = try DatabaseQueue(path: path, configuration: Self.readingConfiguration(checking: path, timeLimit: readLimit))
        } catch {
            throw KeychainError.from(error, path: path)
        }
    }

    /// Writes a new keychain file at `path`: built under a temporary name in the same folder, then
    /// linked into place, so the name never shows a half-made keychain and never replaces a file.
    /// Its companions are claimed first, so a refused create leaves no keychain behind; and it is
    /// born in WAL mode, so its first open does not switch modes through (and then remove) the
    /// -journal file.
    static func create(at path: String, header: KeychainHeader) throws(KeychainError) {
        let folder = (path as NSString).deletingLastPathComponent
        try KeychainFileSet.claimCompanions(of: path)
        // The temporary's own companions get unguessable names from it.
        let temporary = folder + "/." + Sodium.randomData(count: 8).map { String(format: "%02x", $0) }.joined() + ".creating"
        defer {
            for suffix in [""] + KeychainFileSet.companionSuffixes { unlink(temporary + suffix) }
        }
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, FileSafety.privateFileMode)
        guard descriptor >= 0 else {
            throw KeychainError(SecStatus.wrPerm, detail: "cannot create a file in \(folder): \(Errno.current.description)")
        }
        fchmod(descriptor, FileSafety.privateFileMode)
        close(descriptor)
        do {
            var creating = configuration(checking: nil, timeLimit: SQLTimeLimit())
            creating.journalMode = .default
            let queue = try DatabaseQueue(path: temporary, configuration: creating)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                try db.inTransaction {
                    for statement in KeychainSchema.statements { try db.execute(sql: statement) }
                    try insertHeader(header, db)
                    return .commit
                }
                // Written into the file itself (through the rollback journal), before the link.
                try db.execute(sql: "PRAGMA journal_mode = WAL")
            }
            try RetiredConnections.close(queue)
        } catch {
            throw KeychainError.from(error, path: path)
        }
        try syncToDisk(temporary)
        guard link(temporary, path) == 0 else {
            if Errno.current == .exists { throw KeychainError(SecStatus.duplicateKeychain, detail: path) }
            throw KeychainError(SecStatus.wrPerm, detail: "cannot create \(path): \(Errno.current.description)")
        }
        try syncToDisk(folder)
    }

    /// A read outside a transaction: each statement sees the latest commit. Every read here is
    /// one statement or tolerates commits between its statements, and skipping BEGIN/COMMIT is a
    /// good part of a lookup's cost.
    func read<T>(_ body: (Database) throws -> T) throws(KeychainError) -> T {
        do {
            return try reader.unsafeRead { db in
                do { return try readLimit.timing { try body(db) } } catch { throw SQLiteSystemFailure.annotating(error, db) }
            }
        } catch {
            throw KeychainError.from(error, path: path)
        }
    }

    /// Several statements in one read transaction: they all see the same commit (a check and
    /// the data it vouches for must not come from different writes).
    /// BEGIN and COMMIT are prepared once per connection, as in `nest`: GRDB's `inTransaction`
    /// cost several times a small read.
    func snapshot<T>(_ body: (Database) throws -> T) throws(KeychainError) -> T {
        try read { db in
            try db.cachedStatement(sql: "BEGIN DEFERRED TRANSACTION").execute()
            do {
                let result = try body(db)
                try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
                return result
            } catch {
                try? db.rollback()
                throw error
            }
        }
    }

    /// How many write transactions of this process have ended on this file. Read it *before* a
    /// read: rows kept from that read are current while it, and the reading connection's
    /// `dataVersion`, stay the same (`CheckedRowCache`; docs/file-format.md, "Checked rows kept
    /// between reads"). A write ends (and moves it on) before its caller sees it done.
    var writeCount: UInt64 { finishedWrites.load(ordering: .acquiring) }

    /// The reading connection's `PRAGMA data_version`: it changes whenever another connection
    /// (this process's writing one included, or any other process's) has committed to the file
    /// since the reading connection last looked. Inside `snapshot` it names that snapshot's
    /// commit; outside one, it starts a read of its own and names the latest commit.
    ///
    /// Answered without the statement when the WAL index's header (in the -shm, which every commit
    /// of every process rewrites, and which is what the statement's read transaction compares)
    /// is byte for byte what it was just before the last statement: no commit since, so the
    /// number is the one that statement gave. The statement's read transaction (its locks and two
    /// `fcntl`s) and the hop onto the reading connection's queue were most of a cached read's cost
    /// (docs/performance.md, "The check before a read, from the WAL index").
    func dataVersion() throws(KeychainError) -> Int64 {
        let known = lastVersion.withLock { $0 }
        if let region = known.region, let seen = known.header,
           let now = Self.walIndexHeader(UnsafeRawPointer(bitPattern: region)), now == seen {
            return known.version
        }
        let (header, version, region) = try read { db in
            // Taken before the statement: a commit in between leaves the header unlike this one.
            let header = known.region.flatMap { Self.walIndexHeader(UnsafeRawPointer(bitPattern: $0)) }
            let version = try Self.dataVersion(db)
            // Asked after a statement, once its read has opened the WAL index (never made here);
            // the mapping lasts as long as the connection. The first call keeps no header.
            let region = known.region ?? UInt(bitPattern: keywell_sqlite_wal_index(db.sqliteConnection))
            return (header, version, region == 0 ? nil : region)
        }
        lastVersion.withLock { $0 = VersionSeen(region: region, header: header, version: version) }
        return version
    }

    /// Whether `dataVersion` has found the WAL index to answer from (tests).
    var answersFromWALIndex: Bool { lastVersion.withLock { $0.region != nil && $0.header != nil } }

    /// The header's 48 bytes, or nil while a writer is midway through them.
    private static func walIndexHeader(_ region: UnsafeRawPointer?) -> WALIndexHeader? {
        guard let region else { return nil }
        var header = keywell_wal_index_header()
        guard keywell_wal_index_header_read(region, &header) == 1 else { return nil }
        return WALIndexHeader(words: header.words)
    }

    private struct WALIndexHeader: Equatable {
        let words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
        static func == (lhs: Self, rhs: Self) -> Bool { lhs.words == rhs.words }
    }

    private struct VersionSeen {
        /// The address of the WAL index's first region as the reading connection mapped it.
        var region: UInt?
        var header: WALIndexHeader?
        var version: Int64 = 0
    }

    /// Through SQLite's C API (`RawStatement`): it runs before every screened read, and GRDB's
    /// cursor around one integer cost as much as SQLite's own work (docs/performance.md,
    /// "KWallet's readPassword with the rows kept").
    static func dataVersion(_ db: Database) throws -> Int64 {
        let statement = try RawStatement(db, sql: "PRAGMA data_version", values: [])
        guard try statement.step() else { return 0 }
        defer { statement.finish() }  // ends the statement's own read outside a snapshot
        return statement.integer(0)
    }

    /// One IMMEDIATE transaction: rolled back if `body` throws.
    func write<T>(_ body: (Database) throws -> T) throws(KeychainError) -> T {
        // One file: no ordering, no table of connections by path (`writeTogether`).
        var result: T?
        do {
            try Self.nest([self][...], opened: []) { opened in result = try body(opened[0]) }
        } catch {
            throw KeychainError.from(error, path: path)
        }
        return result!
    }

    /// One transaction in each database, nested in path order (so two callers never wait for
    /// each other in a cycle). If `body` throws, every one of them rolls back.
    static func writeTogether<T>(
        _ databases: [KeychainDatabase], _ body: ([Database]) throws -> T
    ) throws(KeychainError) -> T {
        let ordered = databases.sorted { $0.path < $1.path }
        var result: T?
        do {
            try nest(ordered[...], opened: []) { opened in
                // Give `body` the connections in the caller's order.
                let byPath = Dictionary(uniqueKeysWithValues: zip(ordered.map { $0.path }, opened))
                result = try body(databases.map { byPath[$0.path]! })
            }
        } catch {
            throw KeychainError.from(error, path: databases.map { $0.path }.joined(separator: ", "))
        }
        return result!
    }

    private static func nest(
        _ remaining: ArraySlice<KeychainDatabase>, opened: [Database], _ body: ([Database]) throws -> Void
    ) throws {
        guard let first = remaining.first else { return try body(opened) }
        // Whatever the outcome (a commit SQLite reports as failed may still have landed), rows
        // kept from reads before it are stale from here on (`writeCount`).
        defer { first.finishedWrites.add(1, ordering: .releasing) }
        try first.queue.writeWithoutTransaction { db in try first.writeLimit.timing {
            // As `inTransaction(.immediate)` does, with BEGIN and COMMIT prepared once per
            // connection instead of parsed again for every write (~15 µs each).
            try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
            do {
                try first.checkSchemaIfChanged(db)
                try nest(remaining.dropFirst(), opened: opened + [db], body)
                // SQLite rolled back already (after some errors, a full disk among them): say
                // so, as `inTransaction` does, rather than "no transaction is active".
                guard db.isInsideTransaction else {
                    throw DatabaseError(resultCode: .SQLITE_ABORT, message: "Transaction was aborted")
                }
                try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
            } catch {
                // The errno is read before the rollback, whose own I/O could replace it.
                let annotated = SQLiteSystemFailure.annotating(error, db)
                try? db.rollback()  // nothing to do when SQLite ended the transaction already
                throw annotated
            }
        } }
    }

    /// Another process may change the schema while the file is open, and SQLite then runs the
    /// new schema's triggers in this one: each write compares the schema's version, inside its
    /// transaction (so nobody changes it meanwhile), and checks the schema again when it moved.
    /// Through SQLite's C API (`RawStatement`), as `dataVersion`: it runs in every write, and
    /// GRDB's cursor around one integer cost more than the pragma (docs/performance.md,
    /// "What a CreateItem costs").
    private func checkSchemaIfChanged(_ db: Database) throws {
        let statement = try RawStatement(db, sql: "PRAGMA schema_version", values: [])
        let version = try statement.step() ? Int32(truncatingIfNeeded: statement.integer(0)) : 0
        statement.finish()
        guard version != checkedSchemaVersion.load(ordering: .relaxed) else { return }
        try KeychainSchemaCheck.check(db, path: path)
        checkedSchemaVersion.store(version, ordering: .relaxed)
    }

    /// Moves every commit in the -wal into the keychain file and empties the -wal (it stays, 0
    /// bytes: persistent WAL), so that the `.keychain-db` alone holds every item
    /// (docs/cli.md, "Backing up"). Best effort: a reader in another process that holds an old
    /// snapshot makes it stop short (SQLITE_BUSY after the busy timeout), which loses nothing.
    @discardableResult
    func checkpoint() -> Bool {
        do {
            return try queue.writeWithoutTransaction { db in
                let row = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                return (row?[0] as Int?) == 0
            }
        } catch {
            return false
        }
    }

    /// After the keychain locked: the -wal moved into the file (`checkpoint`), and both
    /// connections' page caches and prepared statements given back to malloc. A locked keychain
    /// answers little until it is unlocked again; the next read prepares what it needs.
    func settleAfterLock() {
        checkpoint()
        queue.releaseMemory()
        reader.releaseMemory()
    }

    /// Both connections' page caches given back to malloc, their prepared statements kept: after
    /// a burst of calls the cached pages would stay resident until the keychain locks, and the
    /// kernel keeps the file's pages anyway, so the next call reads them back with a copy
    /// (docs/performance.md, "The daemon").
    func releasePageCaches() {
        for connection in [queue, reader] {
            connection.inDatabase { db in _ = sqlite3_db_release_memory(db.sqliteConnection) }
        }
    }

    /// Bytes the page caches of both connections hold (SQLITE_DBSTATUS_CACHE_USED).
    func pageCacheBytes() -> Int {
        [queue, reader].reduce(0) { total, connection in
            total + connection.inDatabase { db in
                var current: Int32 = 0, highest: Int32 = 0
                sqlite3_db_status(db.sqliteConnection, SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0)
                return Int(current)
            }
        }
    }

    func readHeader() throws(KeychainError) -> KeychainHeader {
        try read { db in try Self.readHeader(db, path: path) }
    }

    static func readHeader(_ db: Database, path: String) throws(KeychainError) -> KeychainHeader {
        let row: Row?
        do {
            row = try Row.fetchOne(db, sql: "SELECT * FROM keychain WHERE id = 1")
        } catch {
            throw KeychainError(SecStatus.invalidKeychain, detail: "\(path) is not a Keywell keychain")
        }
        guard let row else {
            throw KeychainError(SecStatus.invalidKeychain, detail: "\(path) has no keychain header")
        }
        // Each column through a conversion that fails softly: GRDB's plain subscripts stop the
        // process on a NULL or a value of the wrong type, and a damaged file can hold either.
        func column<Value: DatabaseValueConvertible>(_ name: String) throws(KeychainError) -> Value {
            let stored: DatabaseValue = row[name] ?? .null
            guard let value = Value.fromDatabaseValue(stored) else {
                throw KeychainError(SecStatus.invalidKeychain, detail: "\(path) has a damaged header (\(name))")
            }
            return value
        }
        let version: Int = try column("format_version")
        guard version <= KeychainHeader.currentFormatVersion else {
            throw KeychainError(SecStatus.wrongSecVersion, detail: "\(path) has format \(version); this Keywell reads up to \(KeychainHeader.currentFormatVersion)")
        }
        guard let uuid = UUID(data: try column("uuid")) else {
            throw KeychainError(SecStatus.invalidKeychain, detail: "\(path) has a damaged header")
        }
        var header = KeychainHeader(
            formatVersion: version, uuid: uuid,
            kdf: KDFParameters(opsLimit: try column("kdf_ops_limit"), memLimit: try column("kdf_mem_limit")),
            salt: try column("kdf_salt"), wrapNonce: try column("wrap_nonce"), wrappedKey: try column("wrapped_key"),
            settings: KeychainSettings(
                lockOnSleep: try column("lock_on_sleep"), lockAfterSeconds: try column("lock_after_seconds"),
                lockOnScreenLock: row.hasColumn("lock_on_screen_lock") ? try column("lock_on_screen_lock") : false))
        // Absent before format 3: off.
        let enforce: DatabaseValue = row["enforce_access"] ?? .null
        if !enforce.isNull {
            guard let flag = Bool.fromDatabaseValue(enforce) else {
                throw KeychainError(SecStatus.invalidKeychain, detail: "\(path) has a damaged header (enforce_access)")
            }
            header.settings.enforceAccess = flag
        }
        // Absent in format 1; a missing or damaged one in a later format fails `checkMAC`.
        let mac: DatabaseValue = row["settings_mac"] ?? .null
        header.settingsMAC = Data.fromDatabaseValue(mac)
        return header
    }

    /// Replaces the header row (new password or new settings).
    static func writeHeader(_ header: KeychainHeader, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM keychain")
        try UnexpectedChangeCount.check(db, "replacing the keychain header")
        try insertHeader(header, db)
    }

    /// Format 1 files have no `settings_mac` column, format 2 no `enforce_access` (headers are
    /// written in the current format only, after `KeychainUpgrade` added them); files older than
    /// the screen-lock setting lack `lock_on_screen_lock`, added here with the first header written.
    private static func insertHeader(_ header: KeychainHeader, _ db: Database) throws {
        let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info('keychain')")
        if !columns.contains("lock_on_screen_lock") { try db.execute(sql: KeychainSchema.screenLockColumn.alterStatement) }
        try db.execute(
            sql: """
                INSERT INTO keychain (id, format_version, uuid, kdf_salt, kdf_ops_limit, kdf_mem_limit,
                    wrap_nonce, wrapped_key, lock_on_sleep, lock_after_seconds, settings_mac, enforce_access,
                    lock_on_screen_lock)
                VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                header.formatVersion, header.uuid.data, header.salt, header.kdf.opsLimit, header.kdf.memLimit,
                header.wrapNonce, header.wrappedKey, header.settings.lockOnSleep, header.settings.lockAfterSeconds,
                header.settingsMAC, header.settings.enforceAccess, header.settings.lockOnScreenLock,
            ])
        try UnexpectedChangeCount.check(db, "writing the keychain header")
    }

    static func syncToDisk(_ path: String) throws(KeychainError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else {
            throw KeychainError(SecStatus.io, detail: "fsync \(path): \(Errno.current.description)")
        }
    }
}
