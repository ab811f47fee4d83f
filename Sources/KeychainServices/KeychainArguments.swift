import Foundation
import KeywellProtocol

/// How the SecKeychain functions read their keychain arguments and translate settings.
enum KeychainArguments {
    /// The keychain named, or for nil the default keychain (Apple's `Keychain::optional`).
    static func resolve(_ keychain: SecKeychain?, client: KeywellClient = .default) throws(KeychainError) -> String {
        if let keychain { return keychain.nameOrPath }
        return try client.defaultKeychain()
    }

    /// The elements of a CFArray of keychains; anything else in it is errSecParam.
    static func keychains(in array: NSArray) throws(KeychainError) -> [SecKeychain] {
        var keychains: [SecKeychain] = []
        for element in array {
            switch element {
            case let keychain as SecKeychain: keychains.append(keychain)
            // Lenient: a name or path where Apple wants a SecKeychainRef.
            case let text as String: keychains.append(SecKeychain(nameOrPath: text))
            default: throw .param("a keychain list holds a \(type(of: element))")
            }
        }
        return keychains
    }

    /// A keychain's file path. Like Apple's, it needs no existing file: a name that does not
    /// exist yet gets the path it would have (docs/native-api.md "Where things live").
    static func path(of nameOrPath: String, client: KeywellClient = .default,
                     environment: [String: String] = ProcessInfo.processInfo.environment) throws(KeychainError) -> String {
        if nameOrPath.hasPrefix("/") { return nameOrPath }
        do {
            return try client.info(nameOrPath).path
        } catch where error.status == SecStatus.noSuchKeychain {
            return expectedPath(ofName: nameOrPath, environment: environment)
        }
    }

    /// `$XDG_DATA_HOME/keywell/keychains/<name>.keychain-db`, `~/.local/share` by default.
    static func expectedPath(ofName name: String, environment: [String: String]) -> String {
        var dataHome = environment["XDG_DATA_HOME"] ?? ""
        if !dataHome.hasPrefix("/") {
            dataHome = (environment["HOME"] ?? NSHomeDirectory()) + "/.local/share"
        }
        return dataHome + "/keywell/keychains/" + name + ".keychain-db"
    }

    /// Apple's "never" lock interval.
    static let appleNever = UInt32(Int32.max)

    /// Keywell's `lockAfterSeconds` (0 = never) as Apple's `lockInterval` (INT32_MAX = never).
    static func appleLockInterval(_ lockAfterSeconds: UInt32) -> UInt32 {
        lockAfterSeconds == 0 ? appleNever : lockAfterSeconds
    }

    /// Apple's `lockInterval` as Keywell's `lockAfterSeconds`: INT32_MAX and above mean never,
    /// and so does 0 (Apple has no "lock at once" either).
    static func keywellLockAfterSeconds(_ lockInterval: UInt32) -> UInt32 {
        lockInterval >= appleNever ? 0 : lockInterval
    }
}
