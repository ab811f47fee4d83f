import KeywellDBus

/// The interfaces as introspection shows them (libsecret's org.freedesktop.Secrets.xml, plus
/// gnome-keyring's `Item.Type` and `Service.LockService`, which clients written for it call, and
/// its private interface that Seahorse calls).
enum SecretServiceInterfaces {
    static let service = DBusInterface(
        name: SecretServiceNames.serviceInterface,
        methods: [
            method("OpenSession", in: [("algorithm", "s"), ("input", "v")], out: [("output", "v"), ("result", "o")]),
            method("CreateCollection", in: [("properties", "a{sv}"), ("alias", "s")],
                   out: [("collection", "o"), ("prompt", "o")]),
            method("SearchItems", in: [("attributes", "a{ss}")], out: [("unlocked", "ao"), ("locked", "ao")]),
            method("Unlock", in: [("objects", "ao")], out: [("unlocked", "ao"), ("prompt", "o")]),
            method("Lock", in: [("objects", "ao")], out: [("locked", "ao"), ("Prompt", "o")]),
            method("LockService"),
            method("GetSecrets", in: [("items", "ao"), ("session", "o")], out: [("secrets", "a{o(oayays)}")]),
            method("ReadAlias", in: [("name", "s")], out: [("collection", "o")]),
            method("SetAlias", in: [("name", "s"), ("collection", "o")]),
        ],
        signals: [
            signal("CollectionCreated", ("collection", "o")),
            signal("CollectionDeleted", ("collection", "o")),
            signal("CollectionChanged", ("collection", "o")),
        ],
        properties: [DBusProperty(name: "Collections", signature: "ao")]
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
            method("Delete", out: [("prompt", "o")]),
            method("SearchItems", in: [("attributes", "a{ss}")], out: [("results", "ao")]),
            method("CreateItem", in: [("properties", "a{sv}"), ("secret", "(oayays)"), ("replace", "b")],
                   out: [("item", "o"), ("prompt", "o")]),
        ],
        signals: [
            signal("ItemCreated", ("item", "o")),
            signal("ItemDeleted", ("item", "o")),
            signal("ItemChanged", ("item", "o")),
        ],
        properties: [
            DBusProperty(name: "Items", signature: "ao"),
            DBusProperty(name: "Label", signature: "s", access: .readwrite),
            DBusProperty(name: "Locked", signature: "b"),
            DBusProperty(name: "Created", signature: "t"),
            DBusProperty(name: "Modified", signature: "t"),
        ]
    )

    static let item = DBusInterface(
        name: SecretServiceNames.itemInterface,
        methods: [
            method("Delete", out: [("Prompt", "o")]),
            method("GetSecret", in: [("session", "o")], out: [("secret", "(oayays)")]),
            method("SetSecret", in: [("secret", "(oayays)")]),
        ],
        properties: [
            DBusProperty(name: "Locked", signature: "b"),
            DBusProperty(name: "Attributes", signature: "a{ss}", access: .readwrite),
            DBusProperty(name: "Label", signature: "s", access: .readwrite),
            DBusProperty(name: "Type", signature: "s"),
            DBusProperty(name: "Created", signature: "t"),
            DBusProperty(name: "Modified", signature: "t"),
        ]
    )

    static let session = DBusInterface(name: SecretServiceNames.sessionInterface, methods: [method("Close")])

    static let prompt = DBusInterface(
        name: SecretServiceNames.promptInterface,
        methods: [method("Prompt", in: [("window-id", "s")]), method("Dismiss")],
        signals: [DBusSignalDescription(name: "Completed", arguments: [DBusArgument("dismissed", "b"), DBusArgument("result", "v")])]
    )

    private static func method(_ name: String, in inputs: [(String, DBusSignature)] = [],
                               out outputs: [(String, DBusSignature)] = []) -> DBusMethod {
        DBusMethod(name: name, inputs: inputs.map { DBusArgument($0.0, $0.1) }, outputs: outputs.map { DBusArgument($0.0, $0.1) })
    }

    private static func signal(_ name: String, _ argument: (String, DBusSignature)) -> DBusSignalDescription {
        DBusSignalDescription(name: name, arguments: [DBusArgument(argument.0, argument.1)])
    }
}
