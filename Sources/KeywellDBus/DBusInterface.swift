/// The description of one D-Bus interface: what introspection shows and what the dispatcher
/// uses to answer UnknownMethod and to serve Properties.
public struct DBusInterface: Sendable, Hashable {
    public var name: String
    public var methods: [DBusMethod]
    public var signals: [DBusSignalDescription]
    public var properties: [DBusProperty]
    public var annotations: [DBusAnnotation]

    public init(name: String, methods: [DBusMethod] = [], signals: [DBusSignalDescription] = [],
                properties: [DBusProperty] = [], annotations: [DBusAnnotation] = []) {
        self.name = name
        self.methods = methods
        self.signals = signals
        self.properties = properties
        self.annotations = annotations
    }

    public func method(named name: String) -> DBusMethod? { methods.first { $0.name == name } }

    /// The method a call names: among overloads (one name, several input signatures, as
    /// KWallet's `close` and `writeEntry`), the one whose signature the call carries; else the
    /// first of that name, so that a wrong signature is refused against it.
    public func method(named name: String, signature: DBusSignature) -> DBusMethod? {
        var first: DBusMethod?
        for method in methods where method.name == name {
            if method.inputSignature == signature { return method }
            if first == nil { first = method }
        }
        return first
    }
    public func property(named name: String) -> DBusProperty? { properties.first { $0.name == name } }
}

public struct DBusArgument: Sendable, Hashable {
    public var name: String?
    public var signature: DBusSignature

    public init(_ name: String?, _ signature: DBusSignature) {
        self.name = name
        self.signature = signature
    }
}

public struct DBusAnnotation: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

public struct DBusMethod: Sendable, Hashable {
    public var name: String
    public var inputs: [DBusArgument] { didSet { inputSignature = .concatenating(inputs.map(\.signature)) } }
    public var outputs: [DBusArgument]
    public var annotations: [DBusAnnotation]
    /// The signature a well-formed call carries; kept, since every call is checked against it.
    public private(set) var inputSignature: DBusSignature

    /// Which of its strings carry secrets (what `org.keywell.SecretStrings` marks in dbus/; the
    /// generator writes it into the tables): those are never made `String`s and are zeroed in
    /// libdbus's copies once done (docs/dbus-layer.md, "Secrets in messages").
    public var secretStrings: DBusSecretStrings

    public init(name: String, inputs: [DBusArgument] = [], outputs: [DBusArgument] = [], annotations: [DBusAnnotation] = [],
                secretStrings: DBusSecretStrings = DBusSecretStrings()) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.annotations = annotations
        self.secretStrings = secretStrings
        self.inputSignature = .concatenating(inputs.map(\.signature))
    }

    public var outputSignature: DBusSignature { .concatenating(outputs.map(\.signature)) }
}

/// The arguments of a method whose strings carry secrets (a KWallet password), by index.
public struct DBusSecretStrings: Sendable, Hashable {
    /// Inputs of type `s` that decode to `DBusValue.secretString`; the call's strings, all of
    /// them, are zeroed in libdbus's copy once it is handled.
    public var inputs: [Int]
    /// Outputs holding secret strings (`.secretString`, in a variant too): the reply's strings,
    /// all of them, are zeroed in libdbus's copy once it is written out.
    public var outputs: [Int]

    public init(inputs: [Int] = [], outputs: [Int] = []) {
        self.inputs = inputs
        self.outputs = outputs
    }
}

public struct DBusSignalDescription: Sendable, Hashable {
    public var name: String
    public var arguments: [DBusArgument]
    public var annotations: [DBusAnnotation]

    public init(name: String, arguments: [DBusArgument] = [], annotations: [DBusAnnotation] = []) {
        self.name = name
        self.arguments = arguments
        self.annotations = annotations
    }
}

public struct DBusProperty: Sendable, Hashable {
    public enum Access: String, Sendable, Hashable {
        case read, write, readwrite
        public var isReadable: Bool { self != .write }
        public var isWritable: Bool { self != .read }
    }

    public var name: String
    public var signature: DBusSignature
    public var access: Access
    public var annotations: [DBusAnnotation]

    public init(name: String, signature: DBusSignature, access: Access = .read, annotations: [DBusAnnotation] = []) {
        self.name = name
        self.signature = signature
        self.access = access
        self.annotations = annotations
    }
}

/// Names of the standard interfaces this layer answers for every exported object.
public enum StandardInterface {
    public static let introspectable = "org.freedesktop.DBus.Introspectable"
    public static let properties = "org.freedesktop.DBus.Properties"
    public static let peer = "org.freedesktop.DBus.Peer"
    public static let bus = "org.freedesktop.DBus"
    public static let busName = "org.freedesktop.DBus"
    public static let busPath = "/org/freedesktop/DBus"
    /// The bus's method that registers a connection and gives it its unique name.
    public static let hello = "Hello"
    /// `org.freedesktop.DBus.Peer`'s method that answers nothing but that the peer reads messages.
    public static let ping = "Ping"
}
