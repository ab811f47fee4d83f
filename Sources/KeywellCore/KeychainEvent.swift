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
