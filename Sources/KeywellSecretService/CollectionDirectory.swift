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

    init(store: KeychainStore) {
        self.store = store
    }

    /// The collection, if it exists.
    func collection(_ id: CollectionID) -> (any SecretCollection)? {
        switch id {
        case .session: sessionCollection
        case .keychain(let name): store.keychainExists(name) ? KeychainCollection(store: store, name: name) : nil
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
        let keychains = (try? store.listKeychains()) ?? []
        var ordered: [String] = []
        if let defaultName = try? store.defaultKeychain() { ordered.append(defaultName) }
        for name in ((try? store.searchList()) ?? []) + keychains where !ordered.contains(name) && keychains.contains(name) {
            ordered.append(name)
        }
        return ordered.map { KeychainCollection(store: store, name: $0) } + [sessionCollection]
    }

    /// The ids of every collection (the `Collections` property).
    func allIDs() -> [CollectionID] {
        all().map(\.id)
    }
}
