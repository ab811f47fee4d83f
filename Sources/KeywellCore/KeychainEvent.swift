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
