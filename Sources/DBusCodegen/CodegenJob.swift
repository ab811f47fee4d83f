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

        /// When set, the methods and signals are written as two enums of that name instead
        /// (`NativeMethod.add`, `.rawValue` "Add"), each case with its arguments as
        /// `argumentType(name, signature)`: for an API whose clients call through the enum.
        public var enums: Enums?

        public struct Enums: Sendable {
            public var method: String
            public var signal: String
            public var argumentType: String

            public init(method: String, signal: String, argumentType: String) {
                self.method = method
                self.signal = signal
                self.argumentType = argumentType
            }
        }

        public init(namespace: String, output: String, memberEnum: String = "Member", propertyEnum: String = "Property",
                    enums: Enums? = nil) {
            self.namespace = namespace
            self.output = output
            self.memberEnum = memberEnum
            self.propertyEnum = propertyEnum
            self.enums = enums
        }
    }

    /// What the protocol's functions throw. `.dbus`: `DBusError`, with `InvalidArgs` and
    /// `UnknownMethod` for calls dispatch refuses. `.custom`: the API's own error type, and the
    /// static function of it that makes a refusal of a message (`KeychainError.param`).
    public enum Errors: Sendable {
        case dbus
        case custom(type: String, refusal: String)
    }

    /// The argument each function gets after its inputs: `call: DBusMethodCall`, or, with a
    /// context type, one of that type under `label`, which the object builds once per call and
    /// hands to `dispatch<Name>(_:context:)` (what a call carries besides its arguments).
    public enum Context: Sendable {
        case call
        case custom(type: String, label: String = "context")
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
    public var errors: Errors
    public var context: Context
    /// Input signatures passed as the `DBusValue` itself although Swift has a type for them: for
    /// arguments the implementation checks against caps before it converts them.
    public var valueSignatures: Set<String>

    public init(xml: String, output: String, imports: [String] = [], container: String, interfaces: [Interface],
                names: Names? = nil, access: String = "", errors: Errors = .dbus, context: Context = .call,
                valueSignatures: Set<String> = []) {
        self.xml = xml
        self.output = output
        self.imports = imports
        self.container = container
        self.interfaces = interfaces
        self.names = names
        self.access = access
        self.errors = errors
        self.context = context
        self.valueSignatures = valueSignatures
    }

    /// The annotation that lets a method run on the D-Bus I/O thread (value `io-thread`): it
    /// never blocks, so the object may answer it there without a hand-off. The object's
    /// `placement(of:)` still decides for each call; a method without it runs on a worker.
    public static let placementAnnotation = "org.keywell.Placement"

    /// The annotation (value `true`) of a method whose read may find that a person must be
    /// asked: its function returns a `DBusAnswer` (the answer, or the question and the finish
    /// left for a thread that may wait), and so does its interface's dispatch
    /// (docs/dbus-layer.md, "Where a call runs").
    public static let mayAskAnnotation = "org.keywell.MayAsk"

    /// The annotation (value `true`) of a method of one output whose handler writes that value
    /// into the reply (`DBusWrittenValue`, checked against the declared type as it is written)
    /// instead of returning a `DBusValue`: for replies of thousands of entries. Its interface's
    /// dispatch returns a `DBusReplyBody` (docs/dbus-layer.md, "Interfaces from XML").
    public static let writtenReplyAnnotation = "org.keywell.WrittenReply"

    /// The annotation of a method whose strings carry secrets (KWallet's passwords). Its value
    /// names those arguments as Qt numbers them, `In3`, `Out0`, separated by spaces: an `s`
    /// input or output becomes `SecretBytes` (its UTF-8 in locked, wiped memory, never a
    /// `String`); an output of another type holding strings stays a `DBusValue` whose secret
    /// strings its handler makes `.secretString`. The table marks the method
    /// (`DBusMethod.secretStrings`): the marked inputs decode into locked memory, and every
    /// string of the call (when an input is marked) and of the reply (when an output is) is
    /// zeroed in libdbus's copy once done (docs/dbus-layer.md, "Secrets in messages").
    public static let secretStringsAnnotation = "org.keywell.SecretStrings"
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
            names: Names(namespace: "SecretServiceProtocol", output: "Sources/KeywellProtocol/Generated/SecretServiceNames.swift"),
            context: .callContext
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
                         memberEnum: "GnomeKeyringMember", propertyEnum: "GnomeKeyringProperty"),
            context: .callContext
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
            names: Names(namespace: "PortalNames", output: "Sources/KeywellSecretService/Generated/PortalMemberNames.swift"),
            context: .callContext
        ),
        CodegenJob(
            xml: "dbus/org.kde.KWallet.xml",
            output: "Sources/KeywellSecretService/Generated/KWalletInterfaces.swift",
            imports: ["KeywellProtocol"],
            container: "KWalletInterfaces",
            interfaces: [Interface("org.kde.KWallet", property: "kwallet", protocolName: "KWalletMethods", nameConstant: "interface")],
            names: Names(namespace: "KWalletProtocol", output: "Sources/KeywellProtocol/Generated/KWalletNames.swift"),
            context: .callContext
        ),
        CodegenJob(
            xml: "dbus/org.gnome.keyring.internal.Prompter.Callback.xml",
            output: "Sources/KeywellSecretService/Generated/GcrInterfaces.swift",
            container: "GcrInterfaces",
            interfaces: [
                Interface("org.gnome.keyring.internal.Prompter.Callback", property: "promptCallback",
                          protocolName: "GcrPromptCallbackMethods"),
            ],
            context: .callContext
        ),
        // The native API: its methods and signals are the enums clients call through; its
        // functions throw the API's own errors (Param for a refused call, docs/native-api.md);
        // lists and maps arrive as values, checked against caps first.
        CodegenJob(
            xml: "dbus/org.keywell.Keychain1.xml",
            output: "Sources/KeywellDaemon/Generated/NativeInterfaces.swift",
            imports: ["KeywellProtocol", "KeywellSecretService"],
            container: "NativeInterfaces",
            interfaces: [Interface("org.keywell.Keychain1", property: "keychain", protocolName: "KeychainMethods", nameConstant: "interface")],
            names: Names(namespace: "KeywellNames", output: "Sources/KeywellProtocol/Generated/NativeNames.swift",
                         enums: .init(method: "NativeMethod", signal: "NativeSignal", argumentType: "NativeArgument")),
            errors: .custom(type: "KeychainError", refusal: "param"),
            context: .callContext,
            valueSignatures: ["as", "a{ss}"]
        ),
    ]
}

extension CodegenJob.Context {
    /// The one per-call context every interface keywelld serves gets (`CallContext`: the call,
    /// its caller as access control sees it, its deadline and log scope), built once per call
    /// by the object that received it (docs/dbus-layer.md, "One context per call").
    public static let callContext = CodegenJob.Context.custom(type: "CallContext", label: "call")
}

extension CodegenJob {
    /// The interface files among `names` (a listing of `dbus/`) that no job reads.
    public static func unclaimedXML(in names: [String]) -> [String] {
        names.filter { name in name.hasSuffix(".xml") && !all.contains { $0.xml == "dbus/" + name } }.sorted()
    }
}
