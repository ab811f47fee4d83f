import KeywellDBus
import KeywellProtocol

/// `org.keywell.Keychain1` as introspection shows it; the same as dbus/org.keywell.Keychain1.xml
/// (a test keeps the two equal).
enum NativeInterface {
    static let description = DBusInterface(
        name: KeywellNames.interface,
        methods: [
            method("Add", in: [("attributes", "a{sv}")], out: [("result", "a{sv}")]),
            method("CopyMatching", in: [("query", "a{sv}")], out: [("results", "aa{sv}")]),
            method("Update", in: [("query", "a{sv}"), ("attributes", "a{sv}")]),
            method("Delete", in: [("query", "a{sv}")]),
            method("CreateKeychain", in: [("name", "s"), ("password", "ay")], out: [("path", "s")]),
            method("DeleteKeychain", in: [("keychain", "s")]),
            method("ListKeychains", out: [("keychains", "as")]),
            method("GetSearchList", out: [("keychains", "as")]),
            method("SetSearchList", in: [("keychains", "as")]),
            method("GetDefaultKeychain", out: [("keychain", "s")]),
            method("SetDefaultKeychain", in: [("keychain", "s")]),
            method("GetLoginKeychain", out: [("keychain", "s")]),
            method("Unlock", in: [("keychain", "s"), ("password", "ay")]),
            method("Lock", in: [("keychain", "s")]),
            method("LockAll"),
            method("ChangePassword", in: [("keychain", "s"), ("old_password", "ay"), ("new_password", "ay")]),
            method("GetInfo", in: [("keychain", "s")], out: [("info", "a{sv}")]),
            method("SetSettings", in: [("keychain", "s"), ("settings", "a{sv}")]),
            method("BackupKeychain", in: [("keychain", "s"), ("path", "s"), ("replace", "b")]),
            method("RestoreKeychain", in: [("path", "s"), ("keychain", "s"), ("replace", "b")], out: [("keychain_path", "s")]),
            method("MigrateKeyrings", in: [("keyring", "s"), ("password", "ay")], out: [("reports", "aa{sv}")]),
            method("GetMigrationStatus", out: [("sources", "aa{sv}")]),
            method("ExportGnomeKeyring", in: [("keychain", "s"), ("path", "s"), ("password", "ay"), ("replace", "b")]),
            method("ExportKeychains", in: [("keychains", "as"), ("file", "h"), ("passphrase", "ay")], out: [("items", "u")]),
            method("InspectExport", in: [("file", "h"), ("passphrase", "ay")], out: [("keychains", "as"), ("items", "u")]),
            method("ImportExport", in: [("file", "h"), ("passphrase", "ay"), ("keychain", "s"), ("policy", "s")],
                   out: [("summary", "a{sv}")]),
            method("WhoAmI", out: [("identity", "s"), ("strength", "s"), ("reason", "s")]),
        ],
        signals: [
            signal("KeychainLocked", ("keychain", "s")),
            signal("KeychainUnlocked", ("keychain", "s")),
            signal("ItemsChanged", ("keychain", "s")),
            signal("DefaultKeychainChanged", ("keychain", "s")),
            signal("SearchListChanged", ("keychains", "as")),
        ]
    )

    private static func method(_ name: String, in inputs: [(String, DBusSignature)] = [],
                               out outputs: [(String, DBusSignature)] = []) -> DBusMethod {
        DBusMethod(name: name, inputs: inputs.map { DBusArgument($0.0, $0.1) }, outputs: outputs.map { DBusArgument($0.0, $0.1) })
    }

    private static func signal(_ name: String, _ argument: (String, DBusSignature)) -> DBusSignalDescription {
        DBusSignalDescription(name: name, arguments: [DBusArgument(argument.0, argument.1)])
    }
}
