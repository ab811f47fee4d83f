import KeywellDBus
import KeywellProtocol

/// `org.keywell.Keychain1` as introspection shows it, built from the contract's `NativeMethod`
/// and `NativeSignal` (a test keeps them equal to dbus/org.keywell.Keychain1.xml).
public enum NativeInterface {
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
