import KeywellDBus
import KeywellProtocol

/// The byte caps of a native call's plain arguments (`s` and `ay`; dictionaries and lists are
/// checked as `WireCodec` reads them), before any of them is copied or used: every string a
/// native method takes is a keychain's name or path, a file's path, a keyring's name or an
/// import policy, every byte array a password (docs/native-api.md, "Limits").
///
/// ```swift
/// try NativeArgumentCaps.check(call.arguments, of: .createKeychain)
/// // errSecParam "CreateKeychain's name is 50000000 bytes; at most 4096 are accepted"
/// ```
public enum NativeArgumentCaps {
    public static func check(_ arguments: [DBusValue], of method: NativeMethod) throws(KeychainError) {
        for (argument, value) in zip(method.inputs, arguments) {
            let what = "\(method.name)'s \(argument.name)"
            switch value {
            case .string(let text):
                if let refusal = ValueCap.keychainName.refusal(text.utf8.count, what) { throw .param(refusal) }
            case .bytes(let bytes):
                if let refusal = ValueCap.secret.refusal(bytes.count, what) { throw .param(refusal) }
            default:
                continue
            }
        }
    }

    /// Whether a string argument may appear in a log line: within its cap.
    public static func isLoggable(_ text: String) -> Bool { text.utf8.count <= ServiceLimits.bytesPerKeychainName }
}
