import Foundation
import KeywellProtocol
import KeywellSystem
import Logging

/// The per-user settings: the search list and the default keychain, each entry a keychain name
/// or an absolute path, as outputs give them.
struct UserSettings: Codable, Equatable, Sendable {
    /// Nil once the default was deleted: there is no default until one is set.
    var defaultKeychain: String?
    /// The list the user set; nil while they never set one, and the list then follows the
    /// default keychain (docs/cli.md "The search list and the default keychain").
    var explicitSearchList: [String]?

    /// What searches walk: the list as set, else `[default keychain]` (empty without a default).
    var searchList: [String] { explicitSearchList ?? [defaultKeychain].compactMap { $0 } }

    /// A fresh user's settings (no file yet): the default is `login`, the list follows it.
    static let fresh = UserSettings(defaultKeychain: KeywellNames.loginKeychain, explicitSearchList: nil)

    init(defaultKeychain: String?, explicitSearchList: [String]?) {
        self.defaultKeychain = defaultKeychain
        self.explicitSearchList = explicitSearchList
    }

    private enum CodingKeys: String, CodingKey {
        case defaultKeychain, explicitSearchList = "searchList", format
    }

    /// Files before format 2 always stored a list, and stored `[login]` for every user who never
    /// set one: that list is read as never set, so it follows the default as it always should have.
    private static let format = 2

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        defaultKeychain = try container.decodeIfPresent(String.self, forKey: .defaultKeychain)
        let list = try container.decodeIfPresent([String].self, forKey: .explicitSearchList)
        let format = try container.decodeIfPresent(Int.self, forKey: .format) ?? 1
        explicitSearchList = format < Self.format && list == [KeywellNames.loginKeychain] ? nil : list
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.format, forKey: .format)
        try container.encodeIfPresent(defaultKeychain, forKey: .defaultKeychain)
        try container.encodeIfPresent(explicitSearchList, forKey: .explicitSearchList)
    }
}

/// `settings.json` in the config folder. Cached in memory and re-read only when the file changes
/// on disk (looked at again only once its folder reports a change); written atomically
/// (temporary file, fsync, rename, fsync of the folder).
final class UserSettingsFile: Sendable {
    let path: String
    private let folder: String
    private let logger: Logger
    private let changes: PathChangeWatch

    private struct Cache {
        var identity: FileIdentity?
        var settings: UserSettings
        var exists: Bool
        /// Nothing in the folder changed since `identity` was read while this stays current.
        var checked: PathChangeWatch.Mark?
    }

    /// Also serialises read-modify-write updates.
    private let cache = Protected<Cache?>(nil)

    init(configDirectory: String, logger: Logger, changes: PathChangeWatch) {
        folder = configDirectory
        path = configDirectory + "/settings.json"
        self.logger = logger
        self.changes = changes
    }

    /// The current settings, and whether the file exists (a fresh user has none).
    func read() throws(KeychainError) -> (settings: UserSettings, exists: Bool) {
        try cache.withLock { cache throws(KeychainError) in
            let current = try load(&cache)
            return (current.settings, current.exists)
        }
    }

    /// Applies `change` and writes the result if it differs (or if `force` and no file exists yet).
    /// Returns the settings before and after.
    @discardableResult
    func update(
        _ change: (inout UserSettings) throws(KeychainError) -> Void
    ) throws(KeychainError) -> (old: UserSettings, new: UserSettings) {
        try cache.withLock { cache throws(KeychainError) in
            let current = try load(&cache)
            var settings = current.settings
            try change(&settings)
            if settings != current.settings || !current.exists {
                try write(settings)
                let checked = changes.mark(watching: path, edits: true)
                cache = Cache(identity: try FileSafety.checkPrivateFile(path), settings: settings, exists: true, checked: checked)
            }
            return (current.settings, settings)
        }
    }

    private func load(_ cache: inout Cache?) throws(KeychainError) -> Cache {
        if let cached = cache, changes.isUnchanged(since: cached.checked) { return cached }
        let checked = changes.mark(watching: path, edits: true)
        let identity = try FileSafety.checkPrivateFile(path)
        if var cached = cache, cached.identity == identity {
            cached.checked = checked
            cache = cached
            return cached
        }
        _ = try FileSafety.checkDirectory(folder, ownedByUser: true)
        var loaded = Cache(identity: identity, settings: .fresh, exists: identity != nil, checked: checked)
        if identity != nil {
            do {
                loaded.settings = try JSONDecoder().decode(UserSettings.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
            } catch {
                // A damaged file must not lock the user out of their keychains.
                logger.error("ignoring unreadable settings file", metadata: ["path": "\(path)", "error": "\(error)"])
            }
        }
        cache = loaded
        return loaded
    }

    private func write(_ settings: UserSettings) throws(KeychainError) {
        try FileSafety.ensurePrivateDirectory(folder)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data: Data
        do {
            data = try encoder.encode(settings)
        } catch {
            throw KeychainError(SecStatus.io, detail: "cannot encode settings: \(error)")
        }
        try AtomicFile.write(data, to: path)
    }
}
