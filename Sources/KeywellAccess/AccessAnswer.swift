/// The person's answer to an access question (docs/access-control.md "The question").
public enum AccessAnswer: Sendable, Hashable {
    /// This bus connection may use the items until it leaves the bus; nothing is stored.
    case allowOnce
    /// The caller's identity joins each item's access list in the keychain file.
    case alwaysAllow
    /// Refused, dismissed, timed out, or no dialog could be shown; nothing is stored.
    case deny

    public var allows: Bool { self != .deny }
}
