import KeywellDBus
import KeywellProtocol

/// `org.keywell.Keychain1` as introspection shows it, built from the contract's `NativeMethod`
/// and `NativeSignal` (a test keeps them equal to dbus/org.keywell.Keychain1.xml).
///
/// No Apple counterpart: this is Keywell's own D-Bus interface (docs/native-api.md).
///
/// ```swift
/// let object = DBusClosureObject(interfaces: [NativeInterface.description]) { call in
///     // dispatch on NativeMethod(name: call.member)
/// }
/// try connection.register(object, at: KeywellNames.objectPath)
/// ```
public enum NativeInterface {
    /// The interface: every `NativeMethod` with its arguments, every `NativeSignal`.
    public static let description = DBusInterface(
        name: KeywellNames.interface,
        methods: NativeMethod.allCases.map { method in
            DBusMethod(name: method.name, inputs: method.inputs.map(argument), outputs: method.outputs.map(argument))
        },
        signals: NativeSignal.allCases.map { signal in
            DBusSignalDescription(name: signal.name, arguments: signal.arguments.map(argument))
        }
    )

    private static func argument(_ argument: NativeArgument) -> DBusArgument {
        DBusArgument(argument.name, DBusSignature(unchecked: argument.type))
    }
}
