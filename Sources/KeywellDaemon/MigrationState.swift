import Foundation
import KeyringImport
import KeywellCore
import KeywellProtocol

/// What was imported from which keyring file (docs/migration.md, "The state file and importing again"):
/// `$XDG_DATA_HOME/keywell/migration.json`, mode 0600, no secrets. A source whose identity
/// (device, inode, mtime, size, SHA-256) is unchanged is not opened again; an item is imported
/// again only when its modified time is newer than the one recorded.
struct MigrationState: Codable, Sendable {
    struct FileIdentity: Codable, Sendable, Equatable {
        var device: UInt64
        var inode: UInt64
        var modifiedNanoseconds: Int64
        var size: Int64
        var sha256: String
    }

    struct ImportedItem: Codable, Sendable {
        /// The source's modified time (seconds) when it was imported.
        var modified: Int64
        /// The Keywell item it became.
        var keywellItem: String
    }

    struct LastRun: Codable, Sendable {
        var at: Date
        var added: Int
        var updated: Int
        var unchanged: Int
    }

    struct Source: Codable, Sendable {
        var keyring: String
        var format: KeyringFormat
        var keychain: String
        var identity: FileIdentity
        var firstImported: Date
        var lastRun: LastRun
        var items: [String: ImportedItem]
    }

    /// By source path.
    var sources: [String: Source] = [:]
    /// The `default` file was applied once (later changes of the default are the user's).
    var defaultApplied = false

    /// Over this, the state file is not read (it is never written that large: items are capped per file).
    static let maximumFileSize = 64 << 20

    static func load(from path: String) -> MigrationState {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= maximumFileSize,
              let data = FileManager.default.contents(atPath: path),
              let state = try? JSONDecoder().decode(MigrationState.self, from: data)
        else { return MigrationState() }
        return state
    }

    func save(to path: String) throws(KeychainError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do { data = try encoder.encode(self) } catch { throw KeychainError(SecStatus.io, detail: "cannot encode the migration state") }
        try AtomicFile.write(data, to: path)
    }
}
