/// The freedesktop Secret Service's names (the published specification), where both the daemon
/// (`KeywellSecretService.SecretServiceNames` reads them from here) and the `keywell` CLI, which
/// talks to other Secret Services as a client (`migrate --from-secret-service`), need them.
public enum SecretServiceProtocol {
    public static let busName = KeywellNames.secretsBusName
    public static let servicePath = KeywellNames.secretsObjectPath
    public static let serviceInterface = "org.freedesktop.Secret.Service"
    public static let collectionInterface = "org.freedesktop.Secret.Collection"
    public static let itemInterface = "org.freedesktop.Secret.Item"
    public static let sessionInterface = "org.freedesktop.Secret.Session"
    public static let promptInterface = "org.freedesktop.Secret.Prompt"
    /// gnome-keyring's private interface on the service object, which Seahorse and other GNOME
    /// tools call (docs/secret-service.md, "gnome-keyring's private interface").
    public static let gnomeKeyringInternalInterface = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"
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

extension SecretServiceProtocol {
    /// The specification's method and signal names, for the daemon's interface table and
    /// dispatch and for the clients (`keywell migrate --from-secret-service`, keywell-bench).
    public enum Member {
        public static let openSession = "OpenSession"
        public static let createCollection = "CreateCollection"
        public static let searchItems = "SearchItems"
        public static let unlock = "Unlock"
        public static let lock = "Lock"
        public static let lockService = "LockService"
        public static let getSecrets = "GetSecrets"
        public static let readAlias = "ReadAlias"
        public static let setAlias = "SetAlias"
        public static let delete = "Delete"
        public static let createItem = "CreateItem"
        public static let getSecret = "GetSecret"
        public static let setSecret = "SetSecret"
        public static let close = "Close"
        public static let prompt = "Prompt"
        public static let dismiss = "Dismiss"
        public static let completed = "Completed"
        public static let collectionCreated = "CollectionCreated"
        public static let collectionDeleted = "CollectionDeleted"
        public static let collectionChanged = "CollectionChanged"
        public static let itemCreated = "ItemCreated"
        public static let itemDeleted = "ItemDeleted"
        public static let itemChanged = "ItemChanged"
    }

    /// The specification's property names (Service, Collection and Item interfaces).
    public enum Property {
        public static let collections = "Collections"
        public static let items = "Items"
        public static let label = "Label"
        public static let locked = "Locked"
        public static let created = "Created"
        public static let modified = "Modified"
        public static let attributes = "Attributes"
        public static let type = "Type"
    }
}
