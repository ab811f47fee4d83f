import KeywellDBus

/// Names of the Secret portal's backend side (xdg-desktop-portal calls them; docs/portal.md).
public enum PortalNames {
    /// The name keywelld owns for the portal; `keywell.portal` gives it to xdg-desktop-portal.
    public static let busName = "org.freedesktop.impl.portal.desktop.keywell"
    /// Where every portal backend serves its interfaces.
    public static let objectPath = "/org/freedesktop/portal/desktop"
    // `secretInterface`, `requestInterface` and the `Member` and `Property` names are generated
    // from dbus/org.freedesktop.impl.portal.Secret.xml, with the tables (Generated/).
    /// Request objects live below it, one per call (the frontend picks the path).
    public static let requestPathPrefix = "/org/freedesktop/portal/desktop/request/"
    /// The frontend's name: the only caller the backend serves.
    public static let frontendBusName = "org.freedesktop.portal.Desktop"
    /// The interface version this backend implements.
    public static let version: UInt32 = 1

    /// The item holding an app's master secret: gnome-keyring's attributes, so that a migrated
    /// login keyring keeps every app's secret.
    public static let appIDAttribute = "app_id"
    public static let itemSchema = "org.freedesktop.portal.Secret"
    public static func itemLabel(for appID: String) -> String { "Application key for \(appID)" }
    /// The secret's bytes, as gnome-keyring makes them.
    public static let secretLength = 64
    public static let secretContentType = "application/octet-stream"

    /// RetrieveSecret's `response`.
    public enum Response: UInt32, Sendable {
        case success = 0
        case cancelled = 1
        case failed = 2
    }
}
