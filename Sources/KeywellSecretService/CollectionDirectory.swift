import Foundation
import KeywellCore
import KeywellProtocol

/// Finds collections: keychains by name, the in-memory `session` collection, and aliases.
///
/// Aliases: `default` is the default keychain (SetAlias changes it), `login` the login keychain,
/// `session` the in-memory collection. Those are all there are (as in gnome-keyring).
final class CollectionDirectory: Sendable {
    static let aliases = ["default", "login", "session"]

    let store: KeychainStore
    let sessionCollection = MemoryCollection()

    /// Computed once: URL path operations cost more than the stat calls they feed.
    private let keychainsFolder: String
    private let settingsFile: String

    init(store: KeychainStore) {
        self.store = store
        keychainsFolder = store.paths.keychainsDirectory.path
        settingsFile = store.paths.configDirectory.appendingPathComponent("settings.json").path
    }

    /// The collection, if it exists.
    func collection(_ id: CollectionID) -> (any SecretCollection)? {
        switch id {
        case .session: sessionCollection
        case .keychain(let name): store.keychainExists(name) ? KeychainCollection(store: store, name: name) : nil
        }
    }

    /// The collection without checking that its keychain exists: the engine answers
    /// `errSecNoSuchKeychain` (NoSuchObject) at first use, which saves a file check per call.
    func unchecked(_ id: CollectionID) -> any SecretCollection {
        switch id {
        case .session: sessionCollection
        case .keychain(let name): KeychainCollection(store: store, name: name)
        }
    }

    /// What an alias names now; nil when it names nothing (no default keychain, no login keychain yet).
    func target(ofAlias alias: String) -> CollectionID? {
        switch alias {
        case "default": (try? store.defaultKeychain()).map { .keychain($0) }
        case "login": store.keychainExists(KeywellNames.loginKeychain) ? .keychain(KeywellNames.loginKeychain) : nil
        case "session": .session
        default: nil
        }
    }

    func resolve(_ address: CollectionAddress) -> (any SecretCollection)? {
        switch address {
        case .id(let id): collection(id)
        case .alias(let alias): target(ofAlias: alias).flatMap(collection)
        }
    }

    /// Every collection, in the order searches report them: the default keychain, the rest of the
    /// search list, other keychains, then `session`.
    func all() -> [any SecretCollection] {
        orderedKeychainNames().map { KeychainCollection(store: store, name: $0) } + [sessionCollection]
    }

    /// Listing keychains reads the folder and the settings; the list is kept until either changes
    /// (two stat calls tell), since SearchItems needs it on every call.
    private func orderedKeychainNames() -> [String] {
        let key = ListingKey(folder: FileStamp(keychainsFolder), settings: FileStamp(settingsFile))
        if let cached = listing.withLock({ $0 }), cached.key == key { return cached.names }
        let keychains = (try? store.listKeychains()) ?? []
        var ordered: [String] = []
        if let defaultName = try? store.defaultKeychain() { ordered.append(defaultName) }
        for name in ((try? store.searchList()) ?? []) + keychains where !ordered.contains(name) && keychains.contains(name) {
            ordered.append(name)
        }
        listing.withLock { $0 = (key, ordered) }
        return ordered
    }

    private let listing = LockedValue<(key: ListingKey, names: [String])?>(nil)

    /// The ids of every collection (the `Collections` property).
    func allIDs() -> [CollectionID] {
        all().map(\.id)
    }
}

/// What tells that a file or folder changed: identity, size, and change and modification times.
struct FileStamp: Equatable {
    var device: UInt64 = 0
    var inode: UInt64 = 0
    var size: Int64 = 0
    var modified = timespec()
    var changed = timespec()

    init(_ path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = info.st_mtim
        changed = info.st_ctim
    }

    static func == (a: FileStamp, b: FileStamp) -> Bool {
        a.device == b.device && a.inode == b.inode && a.size == b.size
            && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
            && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
    }
}

private struct ListingKey: Equatable {
    var folder: FileStamp
    var settings: FileStamp
}
