/// Bus names, object paths and interface names of the native API (docs/native-api.md "Names").
public enum KeywellNames {
    public static let busName = "org.keywell.Keychain"
    public static let objectPath = "/org/keywell/Keychain"
    public static let interface = "org.keywell.Keychain1"
    public static let errorPrefix = "org.keywell.Keychain1.Error."
    public static let loginKeychain = "login"

    public static let secretsBusName = "org.freedesktop.secrets"
    public static let secretsObjectPath = "/org/freedesktop/secrets"
}
