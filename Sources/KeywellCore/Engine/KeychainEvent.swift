import Foundation

/// State changes the daemon turns into D-Bus signals. Keychains are named as outputs name them.
/// The store sends one event per call per keychain, and only when state changed.
public enum KeychainEvent: Sendable, Equatable {
    case locked(String)
    case unlocked(String)
    case itemsChanged(String)
    /// "" when there is no default any more.
    case defaultKeychainChanged(String)
    case searchListChanged([String])
}

/// Keychains appearing and going, whoever made or removed them (the native API, the CLI, PAM's
/// first login, the Secret Service). Kept apart from `KeychainEvent`: the native API has no
/// signal for them (its clients list keychains again), so `onEvent` does not carry them; the
/// Secret Service turns them into `CollectionCreated` / `CollectionDeleted`.
public enum KeychainLifecycleEvent: Sendable, Equatable {
    case created(String)
    case deleted(String)
}

/// The items one call made, changed or deleted in one keychain, whatever face made the call.
/// The Secret Service turns them into `ItemCreated`, `ItemChanged` and `ItemDeleted` with the
/// new `Items` and item properties (docs/secret-service.md, "Signals"); the native API's
/// `ItemsChanged` names only the keychain, so `onEvent` carries `itemsChanged` alone.
public struct KeychainItemsEvent: Sendable, Equatable {
    public var keychain: String
    public var created: [UUID]
    public var changed: [UUID]
    public var deleted: [UUID]

    public init(keychain: String, created: [UUID] = [], changed: [UUID] = [], deleted: [UUID] = []) {
        self.keychain = keychain
        self.created = created
        self.changed = changed
        self.deleted = deleted
    }
}
