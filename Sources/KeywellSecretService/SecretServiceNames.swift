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
    public static let errorAlreadyExists = "org.freedesktop.Secret.Error.AlreadyExists"
}
