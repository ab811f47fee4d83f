/// The item attributes' keys in native-API dictionaries: the string values of Apple's
/// `kSecAttr…` constants, defined once. The engine names its columns by them, KeychainServices
/// defines its `kSecAttr…` constants as them, and the CLI reads and prints them
/// (docs/native-api.md, "The contract").
///
/// Apple's counterpart is the `kSecAttr…` constants (`kSecAttrAccount` is `"acct"` there too).
///
/// ```swift
/// let query: WireDictionary = [
///     WireKey.class: .string(WireKey.classGenericPassword),
///     AttributeKey.service: .string("example.org"),
///     AttributeKey.account: .string("alice"),
/// ]
/// ```
public enum AttributeKey {
    public static let account = "acct"
    public static let service = "svce"
    public static let generic = "gena"
    public static let server = "srvr"
    public static let `protocol` = "ptcl"
    public static let port = "port"
    public static let path = "path"
    public static let securityDomain = "sdmn"
    public static let authenticationType = "atyp"
    public static let label = "labl"
    public static let description = "desc"
    public static let comment = "icmt"
    public static let creator = "crtr"
    public static let type = "type"
    public static let invisible = "invi"
    public static let negative = "nega"
    public static let accessGroup = "agrp"
    public static let accessible = "pdmn"
    public static let creationDate = "cdat"
    public static let modificationDate = "mdat"
    /// Apple's `kSecAttrSynchronizable`: Keywell items never are (the client answers for it).
    public static let synchronizable = "sync"
}
