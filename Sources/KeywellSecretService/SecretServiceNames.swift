import KeywellDBus

/// Names of the freedesktop Secret Service API (the published specification).
public enum SecretServiceNames {
    public static let busName = "org.freedesktop.secrets"
    public static let servicePath = "/org/freedesktop/secrets"
    public static let serviceInterface = "org.freedesktop.Secret.Service"
    public static let collectionInterface = "org.freedesktop.Secret.Collection"
    public static let itemInterface = "org.freedesktop.Secret.Item"
    public static let sessionInterface = "org.freedesktop.Secret.Session"
    public static let promptInterface = "org.freedesktop.Secret.Prompt"
    public static let errorIsLocked = "org.freedesktop.Secret.Error.IsLocked"
    public static let errorNoSuchObject = "org.freedesktop.Secret.Error.NoSuchObject"
    public static let errorNoSession = "org.freedesktop.Secret.Error.NoSession"
    public static let errorAlreadyExists = "org.freedesktop.Secret.Error.AlreadyExists"

    /// Keys of the `a{sv}` property dictionaries of CreateItem and CreateCollection.
    public static let itemLabelProperty = "org.freedesktop.Secret.Item.Label"
    public static let itemAttributesProperty = "org.freedesktop.Secret.Item.Attributes"
    public static let itemTypeProperty = "org.freedesktop.Secret.Item.Type"
    public static let collectionLabelProperty = "org.freedesktop.Secret.Collection.Label"

    public static let plainAlgorithm = "plain"
    /// "/": no object (no prompt needed, no collection for an alias).
    public static let noObject = "/"

    /// gnome-keyring's private interface on the service object, which Seahorse and other GNOME
    /// tools call (docs/secret-service.md, "gnome-keyring's private interface").
    public static let gnomeKeyringInternalInterface = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"
    /// gnome-keyring's answer to a wrong master password.
    public static let errorDenied = "org.gnome.keyring.Error.Denied"

    /// Whether `path` is one of the Secret Service's objects (the service or anything under it).
    public static func isServiceObject(_ path: String) -> Bool {
        ObjectPathNamespace.path(path, isIn: servicePath)
    }
}
