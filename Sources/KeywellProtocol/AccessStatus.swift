/// The keys of `GetAccessStatus`'s two replies (docs/access-control.md, "keywell doctor"),
/// written once for keywelld and `keywell doctor`.
public enum AccessStatusKey {
    /// Whether keywelld can show an access question now (`b`).
    public static let canAsk = "can_ask"
    /// What would show it: a pinentry's path, or GNOME's dialog (`s`).
    public static let dialog = "dialog"
    /// Why none can be shown, in words (`s`).
    public static let reason = "reason"
}

/// The keys of one grant Always Allow made (one item).
public enum AccessGrantKey {
    public static let identity = "identity"
    public static let keychain = "keychain"
    public static let label = "label"
    /// When it was answered, in Unix seconds (`x`).
    public static let time = "time"
    /// Whether the item's list still names the identity (`b`): `keywell access remove` or a
    /// deleted item undoes a grant.
    public static let holds = "holds"
    /// Grants one reply carries, newest first.
    public static let maximumReported = 1024
}
