#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A value in a native-API dictionary (`a{sv}`), independent of D-Bus: the engine takes and
/// returns these, the daemon maps them to and from variants, the client library to Apple's types.
public enum WireValue: Sendable, Hashable {
    case string(String)
    case data(Data)
    case bool(Bool)
    /// Any D-Bus integer type arrives as this.
    case integer(Int64)
    case strings([String])

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var dataValue: Data? { if case .data(let d) = self { return d } else { return nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var integerValue: Int64? { if case .integer(let i) = self { return i } else { return nil } }
    public var stringsValue: [String]? { if case .strings(let a) = self { return a } else { return nil } }
}

public typealias WireDictionary = [String: WireValue]

/// Keys of native-API dictionaries: the string values of Apple's constants (docs/native-api.md "Dictionaries").
///
/// Apple's counterparts are `kSecClass`, `kSecValue…`, `kSecReturn…`, `kSecMatch…` and
/// `kSecUseKeychain`; item attributes are in `AttributeKey`.
///
/// ```swift
/// let search: WireDictionary = [
///     WireKey.class: .string(WireKey.classInternetPassword),
///     AttributeKey.server: .string("example.org"),
///     WireKey.returnData: .bool(true),
///     WireKey.matchLimit: .string(WireKey.matchLimitAll),
/// ]
/// ```
public enum WireKey {
    public static let `class` = "class"
    public static let valueData = "v_Data"
    public static let valuePersistentRef = "v_PersistentRef"
    public static let returnData = "r_Data"
    public static let returnAttributes = "r_Attributes"
    public static let returnPersistentRef = "r_PersistentRef"
    public static let matchLimit = "m_Limit"
    public static let matchLimitOne = "m_LimitOne"
    public static let matchLimitAll = "m_LimitAll"
    public static let matchCaseInsensitive = "m_CaseInsensitive"
    public static let matchSearchList = "m_SearchList"
    public static let useKeychain = "u_Keychain"
    /// An item's access list (`AccessList.wireValue`): in Add and Update, and returned by
    /// CopyMatching when `returnAccess` is true. The string of Apple's `kSecAttrAccess`.
    public static let access = "acls"
    /// The `access` value that trusts any application.
    public static let accessAnyApplication = "any"
    /// Asks CopyMatching for each item's `access`.
    public static let returnAccess = "r_Access"
    /// Keywell's own: asks CopyMatching to name each item's keychain under `useKeychain`, as
    /// `GetSearchList` names it, so that a client searching the whole search list needs one
    /// request, not one per keychain (docs/native-api.md "Dictionaries").
    public static let returnKeychain = "r_Keychain"
    /// Whether CopyMatching (with `r_Data`), Update and Delete may ask the person about an item
    /// whose access list does not trust the caller (docs/native-api.md "Access control"): one of
    /// the three values below, the strings of Apple's `kSecUseAuthenticationUI` and its values.
    public static let useAuthenticationUI = "u_AuthUI"
    /// Ask (the default).
    public static let useAuthenticationUIAllow = "u_AuthUIA"
    /// Never ask: `errSecInteractionNotAllowed` at once.
    public static let useAuthenticationUIFail = "u_AuthUIF"
    /// Never ask: leave out the items that would need an answer.
    public static let useAuthenticationUISkip = "u_AuthUIS"

    /// Keywell's own: with `r_Attributes`, also return the item's free-form (Secret Service)
    /// attributes under `ssAttributes`, `ssContentType` and `ssType` (docs/export-import.md).
    public static let returnSecretServiceAttributes = "r_SSAttributes"
    /// The item's Secret Service attributes as name, value, name, value… sorted by name.
    public static let secretServiceAttributes = "ssAttributes"
    /// The secret's content type when it is not text/plain.
    public static let secretServiceContentType = "ssContentType"
    /// The item's Secret Service `Type` when one was given beyond its schema.
    public static let secretServiceType = "ssType"

    public static let classGenericPassword = ItemClass.genericPassword.rawValue
    public static let classInternetPassword = ItemClass.internetPassword.rawValue
}

/// `GetInfo` and `SetSettings` keys.
public enum KeychainInfoKey {
    public static let name = "name"
    public static let path = "path"
    public static let locked = "locked"
    public static let itemCount = "itemCount"
    public static let lockOnSleep = "lockOnSleep"
    public static let lockOnScreenLock = "lockOnScreenLock"
    public static let lockAfterSeconds = "lockAfterSeconds"
    /// Whether new items trust only their creator (`b`; docs/access-control.md).
    public static let enforceAccess = "enforceAccess"
    public static let isDefault = "isDefault"
    public static let isLogin = "isLogin"
}

/// `ImportExport`'s summary keys (item counts).
public enum ImportSummaryKey {
    public static let added = "added"
    public static let replaced = "replaced"
    public static let skipped = "skipped"
}

/// `SyncStatus`'s keys (docs/sync.md): `machines` are `id<TAB>name<TAB>last change (ms)` lines,
/// this machine first; `refused` are `file<TAB>why`; `lastMerge` is -1 before the first.
public enum SyncStatusKey {
    public static let enabled = "enabled"
    public static let folder = "folder"
    public static let machines = "machines"
    public static let lastMerge = "lastMerge"
    public static let refused = "refused"
}

/// The keys of each `SyncConflicts` entry: a losing version a merge kept.
public enum SyncConflictKey {
    public static let version = "version"
    public static let label = "label"
    public static let service = "service"
    public static let account = "account"
    /// Milliseconds since 1970.
    public static let when = "when"
    public static let machine = "machine"
}
