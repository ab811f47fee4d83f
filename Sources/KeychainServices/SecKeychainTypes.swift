import Foundation

/// A keychain reference, Apple's `SecKeychainRef`: a name (a file in Keywell's keychains
/// folder) or an absolute path. Like Apple's, holding one does not mean the keychain exists
/// (`SecKeychainOpen` never checks). A class, so that `SecKeychain?` out-parameters, CFArrays of
/// keychains and `kSecUseKeychain` values work as on Apple platforms; equal when they name the
/// same keychain the same way.
///
/// ```swift
/// let work = SecKeychain(nameOrPath: "work.keychain")   // Keywell's keychain "work"
/// let query = [kSecClass: kSecClassGenericPassword, kSecUseKeychain: work,
///              kSecAttrService: "example.org", kSecReturnData: true] as CFDictionary
/// var result: CFTypeRef?
/// let status = SecItemCopyMatching(query, &result)
/// ```
// @unchecked: immutable; NSObject keeps the compiler from seeing it.
public final class SecKeychain: NSObject, @unchecked Sendable {
    /// What the native API is given for this keychain.
    public let nameOrPath: String

    /// `nameOrPath` as Apple code writes keychain names: relative names lose a trailing
    /// `.keychain` or `.keychain-db` (`"login.keychain"` is Keywell's `login`); absolute paths
    /// are kept as they are.
    public init(nameOrPath: String) {
        self.nameOrPath = SecKeychain.normalized(nameOrPath)
    }

    /// A name or path exactly as the daemon gave it (a keychain may really be called `x.keychain`).
    init(daemonName: String) {
        self.nameOrPath = daemonName
    }

    static func normalized(_ text: String) -> String {
        guard !text.hasPrefix("/") else { return text }
        for suffix in [".keychain-db", ".keychain"] where text.hasSuffix(suffix) && text.count > suffix.count {
            return String(text.dropLast(suffix.count))
        }
        return text
    }

    public override func isEqual(_ object: Any?) -> Bool {
        (object as? SecKeychain)?.nameOrPath == nameOrPath
    }

    public override var hash: Int { nameOrPath.hashValue }

    public override var description: String { "<SecKeychain \(nameOrPath)>" }
}

/// `SecKeychainGetStatus` flags.
public typealias SecKeychainStatus = UInt32
public let kSecUnlockStateStatus: Int = 1
public let kSecReadPermStatus: Int = 2
public let kSecWritePermStatus: Int = 4

public let SEC_KEYCHAIN_SETTINGS_VERS1: Int32 = 1

/// Apple's keychain settings struct, as Swift imports it from SecKeychain.h.
public struct SecKeychainSettings: Sendable, Equatable {
    /// Must be `SEC_KEYCHAIN_SETTINGS_VERS1`.
    public var version: UInt32
    public var lockOnSleep: DarwinBoolean
    /// Ignored by Apple's implementation (and ours): `lockInterval` alone decides.
    public var useLockInterval: DarwinBoolean
    /// Seconds of idleness before the keychain locks; `INT32_MAX` means never.
    public var lockInterval: UInt32

    public init() {
        self.init(version: 0, lockOnSleep: false, useLockInterval: false, lockInterval: 0)
    }

    public init(version: UInt32, lockOnSleep: DarwinBoolean, useLockInterval: DarwinBoolean, lockInterval: UInt32) {
        self.version = version
        self.lockOnSleep = lockOnSleep
        self.useLockInterval = useLockInterval
        self.lockInterval = lockInterval
    }
}
