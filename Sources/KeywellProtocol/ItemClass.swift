/// The item classes Keywell keeps (Apple's `kSecClass` values, the native API's `class`),
/// defined once. The engine adds each class's primary key, the CLI its `security` print schema
/// (docs/native-api.md, "Primary keys"). `keys` items are SSH keys, made only by the SSH agent
/// (docs/ssh.md); the native API finds and deletes them but does not add them.
///
/// ```swift
/// let query: WireDictionary = [WireKey.class: .string(ItemClass.internetPassword.rawValue)]
/// ```
public enum ItemClass: String, CaseIterable, Sendable {
    case genericPassword = "genp"
    case internetPassword = "inet"
    case key = "keys"
}
