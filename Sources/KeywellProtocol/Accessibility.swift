/// When an item's secret may be read (`pdmn`, Apple's `kSecAttrAccessible…` values), defined once:
/// the engine enforces it, KeychainServices' constants are its raw values, the CLI prints them
/// (docs/access-control.md, "Accessibility").
public enum Accessibility: String, CaseIterable, Sendable {
    /// While the keychain is unlocked; the default.
    case whenUnlocked = "ak"
    /// Also while the keychain is locked again by the idle timer, screen lock or sleep, until
    /// logout or an explicit lock.
    case afterFirstUnlock = "ck"
    /// Apple's deprecated "Always": read as `afterFirstUnlock`.
    case always = "dk"
    /// Apple's "only while a passcode is set": a keychain here always has a password, so this
    /// is `whenUnlockedThisDeviceOnly`.
    case whenPasscodeSetThisDeviceOnly = "akpu"
    case whenUnlockedThisDeviceOnly = "aku"
    case afterFirstUnlockThisDeviceOnly = "cku"
    case alwaysThisDeviceOnly = "dku"

    public static let `default` = Accessibility.whenUnlocked

    /// The value a new item or a change asks for; anything else is `errSecParam`.
    public static func parse(_ value: String) throws(KeychainError) -> Accessibility {
        guard let accessibility = Accessibility(rawValue: value) else {
            throw .param("\(AttributeKey.accessible) \"\(value)\" is not an accessibility value (one of "
                + allCases.map(\.rawValue).joined(separator: ", ") + ")")
        }
        return accessibility
    }

    /// The value a stored item has: one written before values were checked may hold anything,
    /// which counts as the default.
    public static func stored(_ value: String?) -> Accessibility {
        value.flatMap(Accessibility.init(rawValue:)) ?? .default
    }

    /// The secret stays readable after an automatic lock, until logout or an explicit lock.
    public var survivesAutomaticLock: Bool {
        switch self {
        case .afterFirstUnlock, .always, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly: true
        case .whenUnlocked, .whenPasscodeSetThisDeviceOnly, .whenUnlockedThisDeviceOnly: false
        }
    }

    /// Left out of portable exports and of migration to other keyrings.
    public var isThisDeviceOnly: Bool {
        switch self {
        case .whenPasscodeSetThisDeviceOnly, .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly: true
        case .whenUnlocked, .afterFirstUnlock, .always: false
        }
    }
}
