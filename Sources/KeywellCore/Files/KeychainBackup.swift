import Foundation
import GRDB
import KeywellProtocol
import KeywellSystem

/// Copies of keychain files made with SQLite's online backup API (docs/cli.md, "Backing up").
/// The API reads the source in one read transaction, so a copy is one commit's state whatever
/// writers do meanwhile, and it reads through the -wal, which a plain file copy misses.
/// Pages are copied as they are: secrets stay sealed, and the lock state does not matter.
enum KeychainBackup {
    /// Writes a consistent copy of the keychain database at `source` (already checked by
    /// `KeychainFileSet`) to `target`: a single file in rollback-journal mode (no -wal needed),
    /// 0600, built under a temporary name in the target's folder and then linked into place, so
    /// `target` never shows a half-made copy. An existing `target` (a symlink included) is
    /// refused unless `replacing`, which renames over it (never following a symlink).
    static func write(keychainAt source: String, to target: String, replacing: Bool) throws(KeychainError) {
        try refuseFolderName(target)
        if !replacing, exists(target) {
            throw KeychainError(SecStatus.duplicateKeychain, detail: "\(target) already exists (give -f to replace it)")
        }
        let folder = (target as NSString).deletingLastPathComponent
        let temporary = try makeTemporary(in: folder, suffix: "backup")
        defer { removeTemporary(temporary) }
        let reading = KeychainDatabase.readingConfiguration(checking: source, timeLimit: SQLTimeLimit())
        try copyDatabase(from: source, sourceConfiguration: reading, to: temporary, path: target) { db in
            // The copy carries the source's WAL flag; rollback mode makes it one self-contained file.
            try db.execute(sql: "PRAGMA journal_mode = DELETE")
        }
        try KeychainDatabase.syncToDisk(temporary)
        try place(temporary, at: target, replacing: replacing)
        try KeychainDatabase.syncToDisk(folder)
    }

    /// Checks that `backup` is a Keywell keychain (it holds Keywell's schema and nothing else, its
    /// header reads, SQLite's quick check passes) and returns its header; the file is only read.
    static func checkBackup(_ backup: String) throws(KeychainError) -> KeychainHeader {
        try checkRegularFile(backup)
        do {
            let queue = try DatabaseQueue(path: backup, configuration: sourceConfiguration(backup))
            defer { try? queue.close() }
            return try queue.read { db throws(KeychainError) -> KeychainHeader in
                let header = try KeychainDatabase.readHeader(db, path: backup)
                try quickCheck(db, path: backup)
                return header
            }
        } catch {
            throw notAKeychain(error, path: backup)
        }
    }

    /// Installs a copy of the keychain file `backup` at `path`. Built beside `path` and linked
    /// into place as `KeychainDatabase.create` does: the companions are claimed first, and the
    /// file is born in WAL mode. `beforePlacing` runs once the copy is complete and on disk,
    /// right before the link (the caller removes a keychain being replaced there, so a failed
    /// copy never costs it).
    static func install(
        _ backup: String, at path: String, beforePlacing: () throws(KeychainError) -> Void
    ) throws(KeychainError) {
        try checkRegularFile(backup)
        let folder = (path as NSString).deletingLastPathComponent
        try KeychainFileSet.claimCompanions(of: path)
        let temporary = try makeTemporary(in: folder, suffix: "restoring")
        defer { removeTemporary(temporary) }
        do {
            try copyDatabase(from: backup, sourceConfiguration: sourceConfiguration(backup), to: temporary, path: path) { db in
                _ = try KeychainDatabase.readHeader(db, path: backup)
                try db.execute(sql: "PRAGMA journal_mode = WAL")
            }
        } catch {
            throw notAKeychain(error, path: backup)
        }
        try KeychainDatabase.syncToDisk(temporary)
        try beforePlacing()
        try KeychainFileSet.claimCompanions(of: path)
        try place(temporary, at: path, replacing: false)
        try KeychainDatabase.syncToDisk(folder)
    }

    /// Opens `source`, a file to copy from, without writing to it (a backup, or someone's plain
    /// copy): hardened and timed as a keychain's connections are, and refused unless it holds
    /// Keywell's schema and nothing else (docs/file-format.md, "What a keychain file may hold").
    private static func sourceConfiguration(_ source: String) -> Configuration {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "keywell.backup.source"
        let timeLimit = SQLTimeLimit()
        configuration.prepareDatabase { db in
            try ConnectionHardening.harden(db, timeLimit: timeLimit)
            try timeLimit.timing { () throws(KeychainError) in try KeychainSchemaCheck.check(db, path: source) }
        }
        return configuration
    }

    private static func copyDatabase(
        from source: String, sourceConfiguration: Configuration, to temporary: String, path: String,
        finishing: (Database) throws -> Void
    ) throws(KeychainError) {
        do {
            let from = try DatabaseQueue(path: source, configuration: sourceConfiguration)
            defer { try? from.close() }
            var destination = Configuration()
            destination.label = "keywell.backup.copy"
            let timeLimit = SQLTimeLimit()
            destination.prepareDatabase { db in try ConnectionHardening.harden(db, timeLimit: timeLimit) }
            let to = try DatabaseQueue(path: temporary, configuration: destination)
            defer { try? to.close() }
            try from.backup(to: to)
            try to.writeWithoutTransaction { db in
                try timeLimit.timing {
                    try db.execute(sql: "PRAGMA synchronous = FULL")
                    try finishing(db)
                    try quickCheck(db, path: path)
                }
            }
            try to.close()
        } catch {
            throw KeychainError.from(error, path: path)
        }
    }

    private static func quickCheck(_ db: Database, path: String) throws(KeychainError) {
        let result = try? String.fetchOne(db, sql: "PRAGMA quick_check")
        guard result == "ok" else {
            throw KeychainError(SecStatus.invalidKeychain, detail: "\(path) is damaged (SQLite's quick check: \(result ?? "no answer"))")
        }
    }

    /// What was not a readable keychain says so, naming the file.
    private static func notAKeychain(_ error: any Error, path: String) -> KeychainError {
        let error = KeychainError.from(error, path: path)
        switch error.status {
        case SecStatus.wrongSecVersion, SecStatus.wrPerm, SecStatus.diskFull, SecStatus.noSuchKeychain: return error
        default:
            if let detail = error.detail, detail.contains("Keywell keychain") || detail.contains("damaged") { return error }
            let reason = error.detail.map { " (\($0))" } ?? ""
            return KeychainError(SecStatus.invalidKeychain, detail: "\(path) is not a Keywell keychain\(reason)")
        }
    }

    /// A backup to read must be a regular file: opening a fifo or a device would hang or read
    /// endlessly. A symlink to one is followed (the file is only read).
    private static func checkRegularFile(_ path: String) throws(KeychainError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let reason = Errno.current.description
            if Errno.current == .noEntry { throw KeychainError(SecStatus.noSuchKeychain, detail: "\(path): \(reason)") }
            throw KeychainError(SecStatus.wrPerm, detail: "cannot read \(path): \(reason)")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw KeychainError(SecStatus.invalidKeychain, detail: "\(path) is not a regular file, so not a Keywell keychain")
        }
        guard access(path, R_OK) == 0 else {
            throw KeychainError(SecStatus.wrPerm, detail: "cannot read \(path): \(Errno.current.description)")
        }
    }

    private static func refuseFolderName(_ target: String) throws(KeychainError) {
        var info = stat()
        if target.hasSuffix("/") || (lstat(target, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR) {
            throw KeychainError.param("\(target) is a folder; name the backup file")
        }
    }

    /// Anything at `path`, a dangling symlink included.
    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// An empty 0600 file with an unguessable name in `folder`, made with O_EXCL|O_NOFOLLOW so
    /// it is a new file of ours; its companions get unguessable names from it.
    private static func makeTemporary(in folder: String, suffix: String) throws(KeychainError) -> String {
        let name = Sodium.randomData(count: 8).map { String(format: "%02x", $0) }.joined()
        let temporary = folder + "/." + name + "." + suffix
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, FileSafety.privateFileMode)
        guard descriptor >= 0 else {
            throw KeychainError(SecStatus.wrPerm, detail: "cannot write in \(folder): \(Errno.current.description)")
        }
        fchmod(descriptor, FileSafety.privateFileMode)  // the umask may have taken bits away
        close(descriptor)
        return temporary
    }

    private static func removeTemporary(_ temporary: String) {
        for suffix in [""] + KeychainFileSet.companionSuffixes { unlink(temporary + suffix) }
    }

    /// `link` refuses an existing name atomically; `rename` replaces it (a symlink itself, not
    /// what it points to).
    private static func place(_ temporary: String, at target: String, replacing: Bool) throws(KeychainError) {
        let placed = replacing ? rename(temporary, target) : link(temporary, target)
        guard placed == 0 else {
            if Errno.current == .exists { throw KeychainError(SecStatus.duplicateKeychain, detail: "\(target) already exists") }
            throw KeychainError(SecStatus.wrPerm, detail: "cannot create \(target): \(Errno.current.description)")
        }
    }
}
