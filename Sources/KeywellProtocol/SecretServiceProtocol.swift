/// The freedesktop Secret Service's names (the published specification), where both the daemon
/// (`KeywellSecretService.SecretServiceNames` reads them from here) and the `keywell` CLI, which
/// talks to other Secret Services as a client (`migrate --from-secret-service`), need them.
public enum SecretServiceProtocol {
    public static let busName = KeywellNames.secretsBusName
    public static let servicePath = KeywellNames.secretsObjectPath
    // The interfaces' names (`serviceInterface`, ... and `gnomeKeyringInternalInterface`, the
    // private interface Seahorse calls), their members' (`Member`, `GnomeKeyringMember`) and
    // properties' (`Property`) are generated from dbus/org.freedesktop.Secret.xml and
    // dbus/org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface.xml (Generated/).
    public static let errorIsLocked = "org.freedesktop.Secret.Error.IsLocked"
    public static let errorNoSuchObject = "org.freedesktop.Secret.Error.NoSuchObject"
    public static let errorNoSession = "org.freedesktop.Secret.Error.NoSession"
    public static let errorAlreadyExists = "org.freedesktop.Secret.Error.AlreadyExists"

    /// Keys of the `a{sv}` property dictionaries of CreateItem and CreateCollection.
    public static let itemLabelProperty = "org.freedesktop.Secret.Item.Label"
    public static let itemAttributesProperty = "org.freedesktop.Secret.Item.Attributes"
    public static let itemTypeProperty = "org.freedesktop.Secret.Item.Type"
    public static let collectionLabelProperty = "org.freedesktop.Secret.Collection.Label"

    /// Keywell's own CreateItem keys (`t`, seconds since 1970): a copied item's creation and
    /// modification times (docs/migration.md, "From any running Secret Service"). Other services
    /// ignore keys they do not know.
    public static let carriedCreatedProperty = "org.keywell.Item.Created"
    public static let carriedModifiedProperty = "org.keywell.Item.Modified"

    public static let plainAlgorithm = "plain"
    /// "/": no object (no prompt needed, no collection for an alias).
    public static let noObject = "/"
}
