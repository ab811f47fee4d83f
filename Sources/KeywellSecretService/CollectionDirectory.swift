import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSystem

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
        case .keychain(let name): store.registry.keychainExists(name) ? KeychainCollection(store: store, name: name) : nil
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
        case "default": (try? store.registry.defaultKeychain()).map { .keychain($0) }
        case "login": store.registry.keychainExists(KeywellNames.loginKeychain) ? .keychain(KeywellNames.loginKeychain) : nil
        case "session": .session
        default: nil
        }
    }

    /// The collection an alias names now. `target(ofAlias:)` names only a keychain whose file it
    /// found, so the collection is not checked a second time (a file check per call saved).
    func collection(ofAlias alias: String) -> (any SecretCollection)? {
        target(ofAlias: alias).map(unchecked)
    }

    func resolve(_ address: CollectionAddress) -> (any SecretCollection)? {
        switch address {
        case .id(let id): collection(id)
        case .alias(let alias): collection(ofAlias: alias)
        }
    }

    /// Every collection, in the order searches report them: the default keychain, the rest of the
    /// search list, other keychains, then `session`.
    /// Kept with the listing it is made from: a search asks on every call, and building the
    /// array of existentials each time was a tenth of a kept search (docs/performance.md,
    /// "Reads with fewer steps").
    func all() -> [any SecretCollection] { listed().collections }

    private func collections(_ names: [String]) -> [any SecretCollection] {
        var all: [any SecretCollection] = []
        all.reserveCapacity(names.count + 1)
        for name in names { all.append(KeychainCollection(store: store, name: name)) }
        all.append(sessionCollection)
        return all
    }

    private func orderedKeychainNames() -> [String] { listed().names }

    /// Listing keychains reads the folder and the settings; the list is kept until either changes
    /// or the engine reports a change, since SearchItems needs it on every call. inotify tells of
    /// changes without a look at either; without it, or after an event that may be one, two stat
    /// calls tell. Stamps alone can miss two changes within one tick of the file system's clock.
    private func listed() -> (names: [String], collections: [any SecretCollection]) {
        let (cached, generation) = listing.withLock { ($0.current, $0.generation) }
        if let cached, store.registry.keychainListingIsUnchanged(since: cached.mark) { return (cached.names, cached.collections) }
        let mark = store.registry.keychainListingMark()
        let key = ListingKey(folder: FileStamp(keychainsFolder), settings: FileStamp(settingsFile))
        if let cached, cached.key == key {
            // An event that changed nothing here (a keychain file written): the list stands.
            listing.withLock { if $0.generation == generation { $0.current?.mark = mark } }
            return (cached.names, cached.collections)
        }
        let keychains = (try? store.registry.listKeychains()) ?? []
        var ordered: [String] = []
        var placed: Set<String> = []
        let existing = Set(keychains)
        if let defaultName = try? store.registry.defaultKeychain() {
            ordered.append(defaultName)
            placed.insert(defaultName)
        }
        for name in ((try? store.registry.searchList()) ?? []) + keychains where existing.contains(name) && placed.insert(name).inserted {
            ordered.append(name)
        }
        // Not kept if a change was reported meanwhile: it may predate that change.
        let collections = collections(ordered)
        listing.withLock {
            if $0.generation == generation { $0.current = Listing(key: key, mark: mark, names: ordered, collections: collections) }
        }
        return (ordered, collections)
    }

    private struct Listing {
        var key: ListingKey
        var mark: KeychainStore.KeychainListingMark?
        var names: [String]
        var collections: [any SecretCollection]
    }

    private let listing = Protected<(current: Listing?, generation: UInt64)>((nil, 0))

    /// The ids of every collection (the `Collections` property).
    func allIDs() -> [CollectionID] {
        all().map(\.id)
    }

    // MARK: Changes to the list

    /// What `Collections` showed when signals about it last went out.
    private let announced = Protected<Announced?>(nil)

    private struct Announced {
        var names: [String]
        var defaultName: String?
    }

    /// How `Collections` changed since the last call: keychains that appeared or went, whether the
    /// order changed, the collections the alias `default` left and joined, and the list now.
    struct ListChange {
        var collections: [CollectionID] = []
        var created: [CollectionID] = []
        var deleted: [CollectionID] = []
        var reordered = false
        var defaultMoved: [CollectionID] = []
        var isEmpty: Bool { created.isEmpty && deleted.isEmpty && !reordered && defaultMoved.isEmpty }
    }

    /// Notes the list as it is now, without signals: the state later changes are told against.
    func noteCurrentList() {
        announced.withLock { $0 = current() }
    }

    /// After the engine reported a keychain made or removed, or a new default or search list:
    /// forgets the kept list and tells what changed since the last call. `report` runs under a
    /// lock, so the signals of two changes never interleave or repeat.
    func listChanged(_ report: (ListChange) -> Void) {
        announced.withLock { announced in
            listing.withLock {
                $0.current = nil
                $0.generation &+= 1
            }
            let now = current()
            let before = announced ?? now
            announced = now
            var change = ListChange()
            change.collections = now.names.map { .keychain($0) } + [.session]
            let (nowNames, beforeNames) = (Set(now.names), Set(before.names))
            change.created = now.names.filter { !beforeNames.contains($0) }.map { .keychain($0) }
            change.deleted = before.names.filter { !nowNames.contains($0) }.map { .keychain($0) }
            change.reordered = change.created.isEmpty && change.deleted.isEmpty && now.names != before.names
            if now.defaultName != before.defaultName {
                // A collection that just appeared or went is announced as such, not as changed.
                change.defaultMoved = [before.defaultName, now.defaultName].compactMap { $0 }
                    .filter { now.names.contains($0) && before.names.contains($0) }.map { .keychain($0) }
            }
            if !change.isEmpty { report(change) }
        }
    }

    private func current() -> Announced {
        Announced(names: orderedKeychainNames(), defaultName: try? store.registry.defaultKeychain())
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
