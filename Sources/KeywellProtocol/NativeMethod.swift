/// One argument of a native-API method or signal: its name and D-Bus type signature, exactly as
/// dbus/org.keywell.Keychain1.xml spells them.
///
/// ```swift
/// NativeMethod.createKeychain.inputs   // [NativeArgument("name", "s"), NativeArgument("password", "ay")]
/// ```
public struct NativeArgument: Sendable, Hashable {
    /// The argument's name in the introspection XML.
    public let name: String
    /// A D-Bus type signature (`a{sv}`, `s`, `ay`, …).
    public let type: String

    /// An argument named `name` of D-Bus type `type`.
    public init(_ name: String, _ type: String) {
        self.name = name
        self.type = type
    }
}

/// What a native method does to the daemon's state: the daemon places and logs calls by it
/// (docs/native-api.md, "The contract").
public enum NativeMethodClass: Sendable, Hashable {
    /// Only reads the engine's state: no key derivation, no commit, no prompt.
    case read
    /// Adds, changes or deletes items.
    case changesItems
    /// Changes keychains, their lock state, settings or lists (logged at info level).
    case changesKeychains
    /// Reads a caller-supplied export file; changes nothing.
    case readsFile
    /// Answers about the caller itself.
    case describesCaller
    /// Sets what keywelld knows of the user's graphical session (the display its dialogs go
    /// to); on a worker, logged at info level.
    case session
    /// Answers about keywelld itself (whether it can show an access question now, what Always
    /// Allow granted): may ask the bus and read a state file, so never on the I/O thread.
    case describesDaemon
}

/// Every method of `org.keywell.Keychain1`, defined once: the daemon builds its interface table
/// from these and dispatches on them, the client calls through them, and a test checks them
/// against dbus/org.keywell.Keychain1.xml. Adding a case is how a method is added
/// (docs/native-api.md, "The contract").
///
/// No Apple counterpart: these are the calls behind `SecItem…` and `SecKeychain…` (Apple's go
/// to securityd over XPC).
///
/// ```swift
/// guard let method = NativeMethod(name: call.member) else { return call.reply(error: .unknownMethod(call.member)) }
/// if method.methodClass == .read { /* answer from the engine, no commit */ }
/// print(method.name, method.inputs.map(\.type))   // "Add" ["a{sv}"]
/// ```
public enum NativeMethod: String, CaseIterable, Sendable {
    // Items
    case add = "Add"
    case copyMatching = "CopyMatching"
    case update = "Update"
    case delete = "Delete"
    // Keychains
    case createKeychain = "CreateKeychain"
    case deleteKeychain = "DeleteKeychain"
    case listKeychains = "ListKeychains"
    case getSearchList = "GetSearchList"
    case setSearchList = "SetSearchList"
    case getDefaultKeychain = "GetDefaultKeychain"
    case setDefaultKeychain = "SetDefaultKeychain"
    case getLoginKeychain = "GetLoginKeychain"
    case unlock = "Unlock"
    case lock = "Lock"
    case lockAll = "LockAll"
    case changePassword = "ChangePassword"
    case getInfo = "GetInfo"
    case setSettings = "SetSettings"
    // Keywell's own: backups, keyring files, export files, caller identity
    case backupKeychain = "BackupKeychain"
    case restoreKeychain = "RestoreKeychain"
    case migrateKeyrings = "MigrateKeyrings"
    case getMigrationStatus = "GetMigrationStatus"
    case exportGnomeKeyring = "ExportGnomeKeyring"
    case exportKeychains = "ExportKeychains"
    case inspectExport = "InspectExport"
    case importExport = "ImportExport"
    case whoAmI = "WhoAmI"
    // Keywell's own: sync between machines through a folder (docs/sync.md)
    case syncEnable = "SyncEnable"
    case syncStatus = "SyncStatus"
    case syncConflicts = "SyncConflicts"
    case syncConflictSecret = "SyncConflictSecret"
    case syncDisable = "SyncDisable"
    case syncRekey = "SyncRekey"
    // Dialogs: the display they go to, whether one can be shown, what Always Allow granted
    case setSessionDisplay = "SetSessionDisplay"
    case getAccessStatus = "GetAccessStatus"

    /// The D-Bus member name.
    public var name: String { rawValue }

    /// The method of a D-Bus member name; nil for one the API does not have. A hash lookup,
    /// as every call asks it.
    public init?(name: String) {
        guard let method = Self.byName[name] else { return nil }
        self = method
    }

    private static let byName = Dictionary(uniqueKeysWithValues: allCases.map { ($0.name, $0) })

    /// The arguments a caller sends, in order.
    public var inputs: [NativeArgument] { signature.inputs }
    /// The arguments of the reply, in order.
    public var outputs: [NativeArgument] { signature.outputs }

    /// What the method does to the daemon's state (reads, changes items, changes keychains, …).
    public var methodClass: NativeMethodClass {
        switch self {
        case .copyMatching, .listKeychains, .getSearchList, .getDefaultKeychain, .getLoginKeychain, .getInfo,
             .getMigrationStatus, .syncStatus, .syncConflicts, .syncConflictSecret:
            .read
        case .add, .update, .delete:
            .changesItems
        case .createKeychain, .deleteKeychain, .setSearchList, .setDefaultKeychain, .unlock, .lock, .lockAll,
             .changePassword, .setSettings, .backupKeychain, .restoreKeychain, .migrateKeyrings, .exportGnomeKeyring,
             .exportKeychains, .importExport, .syncEnable, .syncDisable, .syncRekey:
            .changesKeychains
        case .inspectExport:
            .readsFile
        case .whoAmI:
            .describesCaller
        case .setSessionDisplay:
            .session
        case .getAccessStatus:
            .describesDaemon
        }
    }

    private var signature: (inputs: [NativeArgument], outputs: [NativeArgument]) {
        typealias A = NativeArgument
        switch self {
        case .add: return ([A("attributes", "a{sv}")], [A("result", "a{sv}")])
        case .copyMatching: return ([A("query", "a{sv}")], [A("results", "aa{sv}")])
        case .update: return ([A("query", "a{sv}"), A("attributes", "a{sv}")], [])
        case .delete: return ([A("query", "a{sv}")], [])
        case .createKeychain: return ([A("name", "s"), A("password", "ay")], [A("path", "s")])
        case .deleteKeychain: return ([A("keychain", "s")], [])
        case .listKeychains: return ([], [A("keychains", "as")])
        case .getSearchList: return ([], [A("keychains", "as")])
        case .setSearchList: return ([A("keychains", "as")], [])
        case .getDefaultKeychain: return ([], [A("keychain", "s")])
        case .setDefaultKeychain: return ([A("keychain", "s")], [])
        case .getLoginKeychain: return ([], [A("keychain", "s")])
        case .unlock: return ([A("keychain", "s"), A("password", "ay")], [])
        case .lock: return ([A("keychain", "s")], [])
        case .lockAll: return ([], [])
        case .changePassword: return ([A("keychain", "s"), A("old_password", "ay"), A("new_password", "ay")], [])
        case .getInfo: return ([A("keychain", "s")], [A("info", "a{sv}")])
        case .setSettings: return ([A("keychain", "s"), A("settings", "a{sv}")], [])
        case .backupKeychain: return ([A("keychain", "s"), A("path", "s"), A("replace", "b")], [])
        case .restoreKeychain: return ([A("path", "s"), A("keychain", "s"), A("replace", "b")], [A("keychain_path", "s")])
        case .migrateKeyrings: return ([A("keyring", "s"), A("password", "ay")], [A("reports", "aa{sv}")])
        case .getMigrationStatus: return ([], [A("sources", "aa{sv}")])
        case .exportGnomeKeyring:
            return ([A("keychain", "s"), A("path", "s"), A("password", "ay"), A("replace", "b")],
                    [A("items", "u"), A("this_device_only", "u")])
        case .exportKeychains:
            return ([A("keychains", "as"), A("file", "h"), A("passphrase", "ay")], [A("items", "u"), A("this_device_only", "u")])
        case .inspectExport: return ([A("file", "h"), A("passphrase", "ay")], [A("keychains", "as"), A("items", "u")])
        case .importExport:
            return ([A("file", "h"), A("passphrase", "ay"), A("keychain", "s"), A("policy", "s")], [A("summary", "a{sv}")])
        case .whoAmI: return ([], [A("identity", "s"), A("strength", "s"), A("reason", "s")])
        case .setSessionDisplay: return ([A("environment", "a{ss}")], [])
        case .getAccessStatus: return ([], [A("status", "a{sv}"), A("grants", "aa{sv}")])
        case .syncEnable: return ([A("keychain", "s"), A("folder", "s"), A("password", "ay"), A("join", "b")], [])
        case .syncStatus: return ([A("keychain", "s")], [A("status", "a{sv}")])
        case .syncConflicts: return ([A("keychain", "s")], [A("versions", "aa{sv}")])
        case .syncConflictSecret: return ([A("keychain", "s"), A("version", "x")], [A("secret", "ay")])
        case .syncDisable: return ([A("keychain", "s")], [])
        case .syncRekey: return ([A("keychain", "s"), A("password", "ay")], [])
        }
    }
}

/// Every signal of `org.keywell.Keychain1`: one per call per keychain, only when state changes.
///
/// ```swift
/// let rule = DBusMatchRule(interface: KeywellNames.interface, member: NativeSignal.itemsChanged.name)
/// let subscription = try connection.addMatch(rule) { signal in
///     print("items changed in", signal.arguments.first ?? "?")
/// }
/// ```
public enum NativeSignal: String, CaseIterable, Sendable {
    case keychainLocked = "KeychainLocked"
    case keychainUnlocked = "KeychainUnlocked"
    case itemsChanged = "ItemsChanged"
    case defaultKeychainChanged = "DefaultKeychainChanged"
    case searchListChanged = "SearchListChanged"

    /// The D-Bus member name.
    public var name: String { rawValue }

    public var arguments: [NativeArgument] {
        switch self {
        case .searchListChanged: [NativeArgument("keychains", "as")]
        default: [NativeArgument("keychain", "s")]
        }
    }
}
