import KeywellDBus
import KeywellProtocol

/// The interfaces as introspection shows them (libsecret's org.freedesktop.Secrets.xml, plus
/// gnome-keyring's `Item.Type` and `Service.LockService`, which clients written for it call, and
/// its private interface that Seahorse calls).
enum SecretServiceInterfaces {
    static let service = DBusInterface(
        name: SecretServiceNames.serviceInterface,
        methods: [
            method(SecretServiceProtocol.Member.openSession, in: [("algorithm", "s"), ("input", "v")], out: [("output", "v"), ("result", "o")]),
            method(SecretServiceProtocol.Member.createCollection, in: [("properties", "a{sv}"), ("alias", "s")],
                   out: [("collection", "o"), ("prompt", "o")]),
            method(SecretServiceProtocol.Member.searchItems, in: [("attributes", "a{ss}")], out: [("unlocked", "ao"), ("locked", "ao")]),
            method(SecretServiceProtocol.Member.unlock, in: [("objects", "ao")], out: [("unlocked", "ao"), ("prompt", "o")]),
            method(SecretServiceProtocol.Member.lock, in: [("objects", "ao")], out: [("locked", "ao"), ("Prompt", "o")]),
            method(SecretServiceProtocol.Member.lockService),
            method(SecretServiceProtocol.Member.getSecrets, in: [("items", "ao"), ("session", "o")], out: [("secrets", "a{o(oayays)}")]),
            method(SecretServiceProtocol.Member.readAlias, in: [("name", "s")], out: [("collection", "o")]),
            method(SecretServiceProtocol.Member.setAlias, in: [("name", "s"), ("collection", "o")]),
        ],
        signals: [
            signal(SecretServiceProtocol.Member.collectionCreated, ("collection", "o")),
            signal(SecretServiceProtocol.Member.collectionDeleted, ("collection", "o")),
            signal(SecretServiceProtocol.Member.collectionChanged, ("collection", "o")),
        ],
        properties: [DBusProperty(name: SecretServiceProtocol.Property.collections, signature: "ao")]
    )

    /// gnome-keyring's private interface, as its introspection shows it (on the service object).
    static let gnomeKeyringInternal = DBusInterface(
        name: SecretServiceNames.gnomeKeyringInternalInterface,
        methods: [
            method("ChangeWithMasterPassword", in: [("collection", "o"), ("original", "(oayays)"), ("master", "(oayays)")]),
            method("ChangeWithPrompt", in: [("collection", "o")], out: [("prompt", "o")]),
            method("CreateWithMasterPassword", in: [("attributes", "a{sv}"), ("master", "(oayays)")], out: [("collection", "o")]),
            method("UnlockWithMasterPassword", in: [("collection", "o"), ("master", "(oayays)")]),
        ]
    )

    static let collection = DBusInterface(
        name: SecretServiceNames.collectionInterface,
        methods: [
            method(SecretServiceProtocol.Member.delete, out: [("prompt", "o")]),
            method(SecretServiceProtocol.Member.searchItems, in: [("attributes", "a{ss}")], out: [("results", "ao")]),
            method(SecretServiceProtocol.Member.createItem, in: [("properties", "a{sv}"), ("secret", "(oayays)"), ("replace", "b")],
                   out: [("item", "o"), ("prompt", "o")]),
        ],
        signals: [
            signal(SecretServiceProtocol.Member.itemCreated, ("item", "o")),
            signal(SecretServiceProtocol.Member.itemDeleted, ("item", "o")),
            signal(SecretServiceProtocol.Member.itemChanged, ("item", "o")),
        ],
        properties: [
            DBusProperty(name: SecretServiceProtocol.Property.items, signature: "ao"),
            DBusProperty(name: SecretServiceProtocol.Property.label, signature: "s", access: .readwrite),
            DBusProperty(name: SecretServiceProtocol.Property.locked, signature: "b"),
            DBusProperty(name: SecretServiceProtocol.Property.created, signature: "t"),
            DBusProperty(name: SecretServiceProtocol.Property.modified, signature: "t"),
        ]
    )

    static let item = DBusInterface(
        name: SecretServiceNames.itemInterface,
        methods: [
            method(SecretServiceProtocol.Member.delete, out: [("Prompt", "o")]),
            method(SecretServiceProtocol.Member.getSecret, in: [("session", "o")], out: [("secret", "(oayays)")]),
            method(SecretServiceProtocol.Member.setSecret, in: [("secret", "(oayays)")]),
        ],
        properties: [
            DBusProperty(name: SecretServiceProtocol.Property.locked, signature: "b"),
            DBusProperty(name: SecretServiceProtocol.Property.attributes, signature: "a{ss}", access: .readwrite),
            DBusProperty(name: SecretServiceProtocol.Property.label, signature: "s", access: .readwrite),
            DBusProperty(name: SecretServiceProtocol.Property.type, signature: "s"),
            DBusProperty(name: SecretServiceProtocol.Property.created, signature: "t"),
            DBusProperty(name: SecretServiceProtocol.Property.modified, signature: "t"),
        ]
    )

    static let session = DBusInterface(name: SecretServiceNames.sessionInterface, methods: [method(SecretServiceProtocol.Member.close)])

    static let prompt = DBusInterface(
        name: SecretServiceNames.promptInterface,
        methods: [method(SecretServiceProtocol.Member.prompt, in: [("window-id", "s")]), method(SecretServiceProtocol.Member.dismiss)],
        signals: [DBusSignalDescription(name: SecretServiceProtocol.Member.completed, arguments: [DBusArgument("dismissed", "b"), DBusArgument("result", "v")])]
    )

    private static func method(_ name: String, in inputs: [(String, DBusSignature)] = [],
                               out outputs: [(String, DBusSignature)] = []) -> DBusMethod {
        DBusMethod(name: name, inputs: inputs.map { DBusArgument($0.0, $0.1) }, outputs: outputs.map { DBusArgument($0.0, $0.1) })
    }

    private static func signal(_ name: String, _ argument: (String, DBusSignature)) -> DBusSignalDescription {
        DBusSignalDescription(name: name, arguments: [DBusArgument(argument.0, argument.1)])
    }
}
