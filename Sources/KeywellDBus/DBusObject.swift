/// Something exported on a connection: one object at a path, or (registered as a subtree) every
/// object below a path, such as the Secret Service's `/org/freedesktop/secrets/collection/<c>/<i>`.
///
/// All requirements may be called on several threads at once: the connection's I/O thread for
/// `placement(of:)` and for calls placed there, worker threads for the rest.
public protocol DBusObject: Sendable {
    /// The interfaces of the object at `path`, or nil when there is no object there (the caller
    /// then gets `UnknownMethod`, as from libdbus and GDBus). The standard interfaces are added by
    /// the connection.
    func interfaces(at path: String) -> [DBusInterface]?

    /// Names (single path elements) of objects directly below `path`, for introspection.
    func childNodes(at path: String) -> [String]

    /// `childNodes(at:)` as `call` (the `Introspect` call) may see them: an object whose
    /// children depend on who asks answers here. The default is `childNodes(at:)`.
    func childNodes(at path: String, call: DBusMethodCall) -> [String]

    /// A call to a method declared in `interfaces(at:)`, carrying exactly the input signature
    /// declared for it (the layer refuses other calls first). Reply exactly once through
    /// `call`, now or later, from any thread.
    func handle(_ call: DBusMethodCall)

    /// The error a call whose signature differs from its method's declared one gets, instead of
    /// reaching `handle(_:)`. The default is `org.freedesktop.DBus.Error.InvalidArgs`.
    func signatureRefusal(_ call: DBusMethodCall, expected: DBusSignature) -> DBusError

    /// Where `handle(_:)` (or, for `org.freedesktop.DBus.Properties`, the property accessors)
    /// runs for this call, decided after its arguments were decoded. The default is `.worker`.
    func placement(of call: DBusMethodCall) -> DBusCallPlacement

    /// `org.freedesktop.DBus.Properties.Get`/`GetAll` for a readable declared property.
    func property(_ name: String, interface: String, at path: String, call: DBusMethodCall) throws(DBusError) -> DBusValue

    /// `GetAll` in one go, for objects whose properties come from one read (an item's row):
    /// every readable declared property of `interface` by name, or nil to be asked one by one.
    func allProperties(interface: String, at path: String, call: DBusMethodCall) throws(DBusError) -> [String: DBusValue]?

    /// `org.freedesktop.DBus.Properties.Set` for a writable declared property; the value's type
    /// has already been checked against the declaration.
    func setProperty(_ name: String, interface: String, value: DBusValue, at path: String, call: DBusMethodCall) throws(DBusError)
}

/// Where a method call's handler runs.
public enum DBusCallPlacement: Sendable {
    /// On the connection's I/O thread, as soon as the call is read: no hand-off to another
    /// thread, which on a small machine is most of a short call's cost. Only for handlers that
    /// never block — no prompts, key derivation, durable writes or nested D-Bus calls — since
    /// every other caller waits meanwhile. Calls with large arguments go to a worker regardless.
    case ioThread
    /// On a worker thread, so a slow handler holds up nobody else.
    case worker
}

extension DBusObject {
    public func childNodes(at path: String) -> [String] { [] }

    public func childNodes(at path: String, call: DBusMethodCall) -> [String] { childNodes(at: path) }

    public func placement(of call: DBusMethodCall) -> DBusCallPlacement { .worker }

    public func property(_ name: String, interface: String, at path: String, call: DBusMethodCall) throws(DBusError) -> DBusValue {
        throw .unknownProperty("No property \(interface).\(name)")
    }

    public func allProperties(interface: String, at path: String, call: DBusMethodCall) throws(DBusError) -> [String: DBusValue]? {
        nil
    }

    public func setProperty(_ name: String, interface: String, value: DBusValue, at path: String, call: DBusMethodCall) throws(DBusError) {
        throw .propertyReadOnly("Property \(interface).\(name) is read-only")
    }
}

/// An object made of closures, for simple services and tests.
public final class DBusClosureObject: DBusObject {
    public typealias PropertyGetter = @Sendable (_ name: String, _ interface: String, _ path: String) throws(DBusError) -> DBusValue
    public typealias PropertySetter = @Sendable (_ name: String, _ interface: String, _ value: DBusValue, _ path: String) throws(DBusError) -> Void

    private let exportedInterfaces: [DBusInterface]
    private let handler: @Sendable (DBusMethodCall) -> Void
    private let getter: PropertyGetter?
    private let setter: PropertySetter?
    private let placer: @Sendable (DBusMethodCall) -> DBusCallPlacement

    public init(interfaces: [DBusInterface], getProperty: PropertyGetter? = nil, setProperty: PropertySetter? = nil,
                placement: @escaping @Sendable (DBusMethodCall) -> DBusCallPlacement = { _ in .worker },
                handler: @escaping @Sendable (DBusMethodCall) -> Void) {
        self.exportedInterfaces = interfaces
        self.handler = handler
        self.getter = getProperty
        self.setter = setProperty
        self.placer = placement
    }

    public func interfaces(at path: String) -> [DBusInterface]? { exportedInterfaces }
    public func handle(_ call: DBusMethodCall) { handler(call) }
    public func placement(of call: DBusMethodCall) -> DBusCallPlacement { placer(call) }

    public func property(_ name: String, interface: String, at path: String, call: DBusMethodCall) throws(DBusError) -> DBusValue {
        guard let getter else { throw .unknownProperty("No property \(interface).\(name)") }
        return try getter(name, interface, path)
    }

    public func setProperty(_ name: String, interface: String, value: DBusValue, at path: String, call: DBusMethodCall) throws(DBusError) {
        guard let setter else { throw .propertyReadOnly("Property \(interface).\(name) is read-only") }
        try setter(name, interface, value, path)
    }
}
