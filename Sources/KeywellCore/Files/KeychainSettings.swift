import KeywellProtocol

/// When a keychain locks by itself, and whether new items trust only their creator. Stored in
/// the keychain file.
struct KeychainSettings: Equatable, Sendable {
    var lockOnSleep: Bool
    /// Seconds without use before it locks; 0 = never.
    var lockAfterSeconds: Int
    /// New items get an access list (their creator, or what Add names) instead of "any
    /// application" (docs/access-control.md). Off in files from before format 3.
    var enforceAccess = false
    /// Lock when the user's screen locks (docs/auto-lock.md). Files written before the setting
    /// existed have it off.
    var lockOnScreenLock = false

    /// macOS defaults: the login keychain only locks at logout; others after 300 s and on sleep.
    /// Keychains other than login also lock with the screen, as they do for sleep: stepping away
    /// is the same risk; the login keychain stays open behind the locked screen, as on macOS.
    /// Every keychain created now enforces access lists.
    static let login = KeychainSettings(lockOnSleep: false, lockAfterSeconds: 0, enforceAccess: true, lockOnScreenLock: false)
    static let standard = KeychainSettings(lockOnSleep: true, lockAfterSeconds: 300, enforceAccess: true, lockOnScreenLock: true)

    /// Applies a `SetSettings` dictionary: only the keys given; unknown keys and wrong types are
    /// `errSecParam`.
    func applying(_ changes: WireDictionary) throws(KeychainError) -> KeychainSettings {
        var result = self
        for (key, value) in changes {
            switch (key, value) {
            case (KeychainInfoKey.lockOnSleep, .bool(let flag)):
                result.lockOnSleep = flag
            case (KeychainInfoKey.lockAfterSeconds, .integer(let seconds)):
                guard let valid = UInt32(exactly: seconds) else {
                    throw .param("lockAfterSeconds must be between 0 and 4294967295")
                }
                result.lockAfterSeconds = Int(valid)
            case (KeychainInfoKey.enforceAccess, .bool(let flag)):
                result.enforceAccess = flag
            case (KeychainInfoKey.lockOnScreenLock, .bool(let flag)):
                result.lockOnScreenLock = flag
            case (KeychainInfoKey.lockOnSleep, _), (KeychainInfoKey.lockAfterSeconds, _), (KeychainInfoKey.enforceAccess, _),
                 (KeychainInfoKey.lockOnScreenLock, _):
                throw .param("\(key) has the wrong type")
            default:
                throw .param("unknown keychain setting \"\(key)\"")
            }
        }
        return result
    }
}
