import KeywellDBus
import KeywellProtocol

/// `org.kde.KWallet` as introspection shows it: every method and signal of kwalletd 5.103,
/// overloads included (dbus/org.kde.KWallet.xml is this table, and a test holds them equal).
enum KWalletInterface {
    static let interface = DBusInterface(
        name: KWalletProtocol.interface,
        methods: [
            method("isEnabled", out: "b"),
            method("open", in: [("wallet", "s"), ("wId", "x"), ("appid", "s")], out: "i"),
            method("openPath", in: [("path", "s"), ("wId", "x"), ("appid", "s")], out: "i"),
            method("openAsync", in: [("wallet", "s"), ("wId", "x"), ("appid", "s"), ("handleSession", "b")], out: "i"),
            method("openPathAsync", in: [("path", "s"), ("wId", "x"), ("appid", "s"), ("handleSession", "b")], out: "i"),
            method("close", in: [("wallet", "s"), ("force", "b")], out: "i"),
            method("close", in: [("handle", "i"), ("force", "b"), ("appid", "s")], out: "i"),
            method("sync", in: [("handle", "i"), ("appid", "s")], annotations: [noReply]),
            method("deleteWallet", in: [("wallet", "s")], out: "i"),
            method("isOpen", in: [("wallet", "s")], out: "b"),
            method("isOpen", in: [("handle", "i")], out: "b"),
            method("users", in: [("wallet", "s")], out: "as"),
            method("changePassword", in: [("wallet", "s"), ("wId", "x"), ("appid", "s")]),
            method("wallets", out: "as"),
            method("folderList", in: handle + [("appid", "s")], out: "as"),
            method("hasFolder", in: folder + [("appid", "s")], out: "b"),
            method("createFolder", in: folder + [("appid", "s")], out: "b"),
            method("removeFolder", in: folder + [("appid", "s")], out: "b"),
            method("entryList", in: folder + [("appid", "s")], out: "as"),
            method("readEntry", in: entry, out: "ay"),
            method("readMap", in: entry, out: "ay"),
            method("readPassword", in: entry, out: "s"),
            method("readEntryList", in: entry, out: "a{sv}", annotations: [variantMap, deprecated]),
            method("entriesList", in: folder + [("appid", "s")], out: "a{sv}", annotations: [variantMap]),
            method("readMapList", in: entry, out: "a{sv}", annotations: [variantMap, deprecated]),
            method("mapList", in: folder + [("appid", "s")], out: "a{sv}", annotations: [variantMap]),
            method("readPasswordList", in: entry, out: "a{sv}", annotations: [variantMap, deprecated]),
            method("passwordList", in: folder + [("appid", "s")], out: "a{sv}", annotations: [variantMap]),
            method("renameEntry", in: folder + [("oldName", "s"), ("newName", "s"), ("appid", "s")], out: "i"),
            method("writeEntry", in: folder + [("key", "s"), ("value", "ay"), ("entryType", "i"), ("appid", "s")], out: "i"),
            method("writeEntry", in: folder + [("key", "s"), ("value", "ay"), ("appid", "s")], out: "i"),
            method("writeMap", in: folder + [("key", "s"), ("value", "ay"), ("appid", "s")], out: "i"),
            method("writePassword", in: folder + [("key", "s"), ("value", "s"), ("appid", "s")], out: "i"),
            method("hasEntry", in: entry, out: "b"),
            method("entryType", in: entry, out: "i"),
            method("removeEntry", in: entry, out: "i"),
            method("disconnectApplication", in: [("wallet", "s"), ("application", "s")], out: "b"),
            method("reconfigure"),
            method("folderDoesNotExist", in: [("wallet", "s"), ("folder", "s")], out: "b"),
            method("keyDoesNotExist", in: [("wallet", "s"), ("folder", "s"), ("key", "s")], out: "b"),
            method("closeAllWallets"),
            method("networkWallet", out: "s"),
            method("localWallet", out: "s"),
            method("pamOpen", in: [("wallet", "s"), ("passwordHash", "ay"), ("sessionTimeout", "i")], annotations: [noReply]),
        ],
        signals: [
            signal("walletListDirty"),
            signal("walletCreated", [("wallet", "s")]),
            signal("walletOpened", [("wallet", "s")]),
            signal("walletAsyncOpened", [("tId", "i"), ("handle", "i")]),
            signal("walletDeleted", [("wallet", "s")]),
            signal("walletClosed", [("wallet", "s")]),
            signal("walletClosed", [("handle", "i")], annotations: [deprecated]),
            signal("walletClosedId", [("handle", "i")]),
            signal("allWalletsClosed"),
            signal("folderListUpdated", [("wallet", "s")]),
            signal("folderUpdated", [(nil, "s"), (nil, "s")]),
            signal("applicationDisconnected", [("wallet", "s"), ("application", "s")]),
        ]
    )

    private static let handle: [(String, DBusSignature)] = [("handle", "i")]
    private static let folder: [(String, DBusSignature)] = handle + [("folder", "s")]
    private static let entry: [(String, DBusSignature)] = folder + [("key", "s"), ("appid", "s")]

    private static let noReply = DBusAnnotation(name: "org.freedesktop.DBus.Method.NoReply", value: "true")
    private static let deprecated = DBusAnnotation(name: "org.freedesktop.DBus.Deprecated", value: "true")
    /// Qt's name for `a{sv}`, which its generated proxies need.
    private static let variantMap = DBusAnnotation(name: "org.qtproject.QtDBus.QtTypeName.Out0", value: "QVariantMap")

    private static func method(_ name: String, in inputs: [(String, DBusSignature)] = [], out: DBusSignature? = nil,
                               annotations: [DBusAnnotation] = []) -> DBusMethod {
        DBusMethod(name: name, inputs: inputs.map { DBusArgument($0.0, $0.1) }, outputs: out.map { [DBusArgument(nil, $0)] } ?? [],
                   annotations: annotations)
    }

    private static func signal(_ name: String, _ arguments: [(String?, DBusSignature)] = [],
                               annotations: [DBusAnnotation] = []) -> DBusSignalDescription {
        DBusSignalDescription(name: name, arguments: arguments.map { DBusArgument($0.0, $0.1) }, annotations: annotations)
    }
}
