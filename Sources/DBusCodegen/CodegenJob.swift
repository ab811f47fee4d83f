/// One file of `dbus/` and the Swift written from it (docs/dbus-layer.md, "Interfaces from XML").
/// Every XML file of `dbus/` has exactly one job; `CodegenJob.all` is the list both
/// `scripts/codegen.sh` and the test that keeps the committed output in step read.
public struct CodegenJob: Sendable {
    /// An interface of the file, and the Swift names made for it.
    public struct Interface: Sendable {
        /// Its D-Bus name, as the XML spells it.
        public var name: String
        /// The static property of `container` holding its `DBusInterface`.
        public var property: String
        /// The protocol its object implements; the dispatch function is `dispatch` followed by
        /// this name without its `Methods` suffix.
        public var protocolName: String
        /// The constant of `Names.namespace` holding its name (when the job has `names`).
        public var nameConstant: String?

        public init(_ name: String, property: String, protocolName: String, nameConstant: String? = nil) {
            self.name = name
            self.property = property
            self.protocolName = protocolName
            self.nameConstant = nameConstant
        }
    }

    /// Where the names of the file's interfaces, members and properties are written as constants,
    /// for the clients as well as the generated dispatch: one spelling of each name.
    public struct Names: Sendable {
        /// An existing enum (in `KeywellProtocol`) the constants extend: `Member` and `Property`
        /// enums are added to it, and one constant per interface name.
        public var namespace: String
        /// The file written, relative to the repository.
        public var output: String
        /// The enums added to `namespace` for the method and signal names and the property names
        /// (an enum with no names is left out).
        public var memberEnum: String
        public var propertyEnum: String

        public init(namespace: String, output: String, memberEnum: String = "Member", propertyEnum: String = "Property") {
            self.namespace = namespace
            self.output = output
            self.memberEnum = memberEnum
            self.propertyEnum = propertyEnum
        }
    }

    /// The XML file, relative to the repository.
    public var xml: String
    /// The Swift file written (tables, protocols, dispatch), relative to the repository.
    public var output: String
    /// Modules the output imports besides KeywellDBus.
    public var imports: [String]
    /// The enum holding the `DBusInterface` values.
    public var container: String
    public var interfaces: [Interface]
    public var names: Names?
    /// "public" for a module's API, "" for internal.
    public var access: String

    public init(xml: String, output: String, imports: [String] = [], container: String, interfaces: [Interface],
                names: Names? = nil, access: String = "") {
        self.xml = xml
        self.output = output
        self.imports = imports
        self.container = container
        self.interfaces = interfaces
        self.names = names
        self.access = access
    }
}

extension CodegenJob {
    /// Every XML file of `dbus/` and what is written from it.
    public static let all: [CodegenJob] = [
        CodegenJob(
            xml: "dbus/org.freedesktop.Secret.xml",
            output: "Sources/KeywellSecretService/Generated/SecretServiceInterfaces.swift",
            imports: ["KeywellProtocol"],
            container: "SecretServiceInterfaces",
            interfaces: [
                Interface("org.freedesktop.Secret.Service", property: "service", protocolName: "ServiceMethods",
                          nameConstant: "serviceInterface"),
                Interface("org.freedesktop.Secret.Collection", property: "collection", protocolName: "CollectionMethods",
                          nameConstant: "collectionInterface"),
                Interface("org.freedesktop.Secret.Item", property: "item", protocolName: "ItemMethods", nameConstant: "itemInterface"),
                Interface("org.freedesktop.Secret.Session", property: "session", protocolName: "SessionMethods",
                          nameConstant: "sessionInterface"),
                Interface("org.freedesktop.Secret.Prompt", property: "prompt", protocolName: "PromptMethods",
                          nameConstant: "promptInterface"),
            ],
            names: Names(namespace: "SecretServiceProtocol", output: "Sources/KeywellProtocol/Generated/SecretServiceNames.swift")
        ),
        CodegenJob(
            xml: "dbus/org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface.xml",
            output: "Sources/KeywellSecretService/Generated/GnomeKeyringInterfaces.swift",
            imports: ["KeywellProtocol"],
            container: "GnomeKeyringInterfaces",
            interfaces: [
                Interface("org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface", property: "internalInterface",
                          protocolName: "GnomeKeyringInternalMethods", nameConstant: "gnomeKeyringInternalInterface"),
            ],
            names: Names(namespace: "SecretServiceProtocol", output: "Sources/KeywellProtocol/Generated/GnomeKeyringNames.swift",
                         memberEnum: "GnomeKeyringMember", propertyEnum: "GnomeKeyringProperty")
        ),
        CodegenJob(
            xml: "dbus/org.freedesktop.impl.portal.Secret.xml",
            output: "Sources/KeywellSecretService/Generated/PortalInterfaces.swift",
            container: "PortalInterfaces",
            interfaces: [
                Interface("org.freedesktop.impl.portal.Secret", property: "secret", protocolName: "PortalSecretMethods",
                          nameConstant: "secretInterface"),
                Interface("org.freedesktop.impl.portal.Request", property: "request", protocolName: "PortalRequestMethods",
                          nameConstant: "requestInterface"),
            ],
            names: Names(namespace: "PortalNames", output: "Sources/KeywellSecretService/Generated/PortalMemberNames.swift")
        ),
        CodegenJob(
            xml: "dbus/org.kde.KWallet.xml",
            output: "Sources/KeywellSecretService/Generated/KWalletInterfaces.swift",
            imports: ["KeywellProtocol"],
            container: "KWalletInterfaces",
            interfaces: [Interface("org.kde.KWallet", property: "kwallet", protocolName: "KWalletMethods", nameConstant: "interface")],
            names: Names(namespace: "KWalletProtocol", output: "Sources/KeywellProtocol/Generated/KWalletNames.swift")
        ),
        CodegenJob(
            xml: "dbus/org.gnome.keyring.internal.Prompter.Callback.xml",
            output: "Sources/KeywellSecretService/Generated/GcrInterfaces.swift",
            container: "GcrInterfaces",
            interfaces: [
                Interface("org.gnome.keyring.internal.Prompter.Callback", property: "promptCallback",
                          protocolName: "GcrPromptCallbackMethods"),
            ]
        ),
    ]
}

extension CodegenJob {
    /// Interface files whose table is still written in Swift, each held equal to its XML by a
    /// test: the native API's table is built from `NativeMethod` (NativeContractTests).
    public static let notGenerated = ["dbus/org.keywell.Keychain1.xml"]

    /// The interface files among `names` (a listing of `dbus/`) that no job reads.
    public static func unclaimedXML(in names: [String]) -> [String] {
        names.filter { name in
            name.hasSuffix(".xml") && !all.contains { $0.xml == "dbus/" + name } && !notGenerated.contains("dbus/" + name)
        }.sorted()
    }
}
