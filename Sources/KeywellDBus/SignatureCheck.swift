/// Every call is checked against the input signature its method declares, before any handler
/// runs: a handler sees only the argument types it declared (docs/secret-service.md,
/// "Conformance with gnome-keyring"). The declarations are the interface tables themselves, the
/// ones introspection shows, so a method's signature is written once.
enum SignatureCheck {
    /// The refusal for `call` to `method`, or nil when the call carries the declared signature.
    static func refusal(of call: DBusMethodCall, to method: DBusMethod, by object: (any DBusObject)?) -> DBusError? {
        guard call.signature != method.inputSignature, !method.acceptsAnyArguments else { return nil }
        return object?.signatureRefusal(call, expected: method.inputSignature) ?? invalidArgs(call, expected: method.inputSignature)
    }

    /// The refusal for a call to one of the standard interfaces this layer answers itself
    /// (`Introspect`, `Properties.Get/GetAll/Set`); nil when the call is well-formed or names a
    /// method those interfaces do not have (which is UnknownMethod, decided elsewhere).
    static func refusal(ofStandardCall call: DBusMethodCall, interface: String) -> DBusError? {
        guard let method = Introspection.standardInterfaces.first(where: { $0.name == interface })?.method(named: call.member)
        else { return nil }
        return refusal(of: call, to: method, by: nil)
    }

    /// `org.freedesktop.DBus.Error.InvalidArgs`, worded as dbus-daemon words it.
    static func invalidArgs(_ call: DBusMethodCall, expected: DBusSignature) -> DBusError {
        .invalidArgs("Call to \(call.member) has wrong args (\(call.signature.rawValue), expected \(expected.rawValue))")
    }
}

extension DBusMethod {
    /// Marks a method that takes whatever it is sent and checks its arguments itself (a test
    /// echo). Introspection shows it; no method of Keywell's own services has it.
    public static let anyArgumentsAnnotation = DBusAnnotation(name: "org.keywell.DBus.AnyArguments", value: "true")

    var acceptsAnyArguments: Bool { annotations.contains(Self.anyArgumentsAnnotation) }
}

extension DBusObject {
    public func signatureRefusal(_ call: DBusMethodCall, expected: DBusSignature) -> DBusError {
        SignatureCheck.invalidArgs(call, expected: expected)
    }
}
