/// What access control says about one caller and one item before anyone is asked.
public enum AccessVerdict: Sendable, Hashable {
    /// The item's list trusts the caller, or the person allowed this connection already.
    case allowed
    /// The caller is not on the list: using the item's secret needs the person's answer.
    case mustAsk
    /// A sandboxed caller the list does not name: for it the item does not exist.
    case hidden
}

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
