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

/// What each method of `org.keywell.Keychain1` does. The cases of `NativeMethod` and
/// `NativeSignal`, with their arguments, are generated from dbus/org.keywell.Keychain1.xml
/// (Generated/NativeNames.swift); adding a method to the XML is how a method is added, and this
/// switch does not compile until it is classified (docs/native-api.md, "The contract").
///
/// No Apple counterpart: these are the calls behind `SecItem…` and `SecKeychain…` (Apple's go
/// to securityd over XPC).
///
/// ```swift
/// guard let method = NativeMethod(name: call.member) else { return call.reply(error: .unknownMethod(call.member)) }
/// if method.methodClass == .changesKeychains { /* logged at info level */ }
/// print(method.name, method.inputs.map(\.type))   // "Add" ["a{sv}"]
/// ```
extension NativeMethod {
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
}
