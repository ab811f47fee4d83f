import KeywellDBus
import KeywellProtocol

/// Names of the freedesktop Secret Service API (the published specification), defined once in
/// `KeywellProtocol.SecretServiceProtocol`, which the CLI shares.
public enum SecretServiceNames {
    public static let busName = SecretServiceProtocol.busName
    public static let servicePath = SecretServiceProtocol.servicePath
    public static let serviceInterface = SecretServiceProtocol.serviceInterface
    public static let collectionInterface = SecretServiceProtocol.collectionInterface
    public static let itemInterface = SecretServiceProtocol.itemInterface
    public static let sessionInterface = SecretServiceProtocol.sessionInterface
    public static let promptInterface = SecretServiceProtocol.promptInterface
    public static let errorIsLocked = SecretServiceProtocol.errorIsLocked
    public static let errorNoSuchObject = SecretServiceProtocol.errorNoSuchObject
    public static let errorNoSession = SecretServiceProtocol.errorNoSession
    public static let errorAlreadyExists = SecretServiceProtocol.errorAlreadyExists

    /// Keys of the `a{sv}` property dictionaries of CreateItem and CreateCollection.
    public static let itemLabelProperty = SecretServiceProtocol.itemLabelProperty
    public static let itemAttributesProperty = SecretServiceProtocol.itemAttributesProperty
    public static let itemTypeProperty = SecretServiceProtocol.itemTypeProperty
    public static let collectionLabelProperty = SecretServiceProtocol.collectionLabelProperty
    public static let carriedCreatedProperty = SecretServiceProtocol.carriedCreatedProperty
    public static let carriedModifiedProperty = SecretServiceProtocol.carriedModifiedProperty

    public static let plainAlgorithm = SecretServiceProtocol.plainAlgorithm
    /// "/": no object (no prompt needed, no collection for an alias).
    public static let noObject = SecretServiceProtocol.noObject

    public static let gnomeKeyringInternalInterface = SecretServiceProtocol.gnomeKeyringInternalInterface
    /// gnome-keyring's answer to a wrong master password.
    public static let errorDenied = "org.gnome.keyring.Error.Denied"

    /// Whether `path` is one of the Secret Service's objects (the service or anything under it).
    public static func isServiceObject(_ path: String) -> Bool {
        ObjectPathNamespace.path(path, isIn: servicePath)
    }
}
