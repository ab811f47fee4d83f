import Foundation
import KeywellProtocol

// Apple's SecKeychain functions with Apple's Swift signatures, over the native D-Bus API
// (through `KeywellClient.default`). A nil keychain means the default keychain wherever Apple's
// does (`Keychain::optional`). Keywell has no UI: where Apple would prompt, these answer
// errSecInteractionNotAllowed.

/// Creates a keychain (unlocked, not added to the search list, as on macOS). `promptUser`
/// asks Apple's UI for the password: errSecInteractionNotAllowed here. `initialAccess` is
/// ignored: Keywell keeps access lists on items, not on keychains.
///
/// Apple's `SecKeychainCreate`. The password is copied, sent to keywelld over D-Bus and
/// wiped; it never goes through argv or the environment.
///
/// ```swift
/// var keychain: SecKeychain?
/// let password = Array("correct horse".utf8)
/// let status = SecKeychainCreate("work", UInt32(password.count), password, false, nil, &keychain)
/// ```
///
/// - Returns: `errSecSuccess` with `keychain` set; `errSecDuplicateKeychain` when it exists;
///   `errSecInteractionNotAllowed` when `promptUser` is true.
public func SecKeychainCreate(_ pathName: UnsafePointer<CChar>, _ passwordLength: UInt32, _ password: UnsafeRawPointer?,
                              _ promptUser: Bool, _ initialAccess: SecAccess?,
                              _ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
    osStatus { () throws(KeychainError) in
        if promptUser { throw KeychainError(SecStatus.interactionNotAllowed, detail: "no UI to prompt for a password") }
        let reference = SecKeychain(nameOrPath: String(cString: pathName))
        let secret = try PasswordBytes.copy(password, length: passwordLength)
        try KeywellClient.default.createKeychain(reference.nameOrPath, password: secret)
        keychain.pointee = reference
    }
}

/// A reference to a keychain by name or path; like Apple's, it does not check that it exists.
///
/// Apple's `SecKeychainOpen`.
///
/// ```swift
/// var work: SecKeychain?
/// _ = SecKeychainOpen("work", &work)
/// let query = [kSecClass: kSecClassGenericPassword, kSecUseKeychain: work!] as CFDictionary
/// ```
///
/// - Returns: always `errSecSuccess`; the first call that uses the reference finds out whether
///   the keychain exists (`errSecNoSuchKeychain`).
public func SecKeychainOpen(_ pathName: UnsafePointer<CChar>, _ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
    keychain.pointee = SecKeychain(nameOrPath: String(cString: pathName))
    return errSecSuccess
}

/// Deletes one keychain (a `SecKeychain`) or several (a CFArray of them). NULL is
/// errSecInvalidKeychain, as on macOS.
///
/// Apple's `SecKeychainDelete`: the keychain's file goes, and it leaves the search list.
///
/// ```swift
/// var old: SecKeychain?
/// _ = SecKeychainOpen("old", &old)
/// let status = SecKeychainDelete(old)
/// ```
///
/// - Returns: `errSecSuccess`; `errSecNoSuchKeychain` when one of them does not exist.
public func SecKeychainDelete(_ keychainOrArray: CFTypeRef?) -> OSStatus {
    osStatus { () throws(KeychainError) in
        guard let keychainOrArray else { throw KeychainError(SecStatus.invalidKeychain, detail: "NULL keychain") }
        let keychains: [SecKeychain]
        if let single = keychainOrArray as? SecKeychain {
            keychains = [single]
        } else if let array = keychainOrArray as? NSArray {
            keychains = try KeychainArguments.keychains(in: array)
        } else {
            throw KeychainError(SecStatus.invalidKeychain, detail: "not a keychain or an array of keychains")
        }
        for keychain in keychains { try KeywellClient.default.deleteKeychain(keychain.nameOrPath) }
    }
}

/// The default keychain, where items go when a call names none.
///
/// Apple's `SecKeychainCopyDefault`.
///
/// ```swift
/// var keychain: SecKeychain?
/// if SecKeychainCopyDefault(&keychain) == errSecSuccess { print(keychain!.nameOrPath) }  // "login"
/// ```
///
/// - Returns: `errSecSuccess` with `keychain` set; `errSecNoDefaultKeychain` when there is none.
public func SecKeychainCopyDefault(_ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
    osStatus { () throws(KeychainError) in
        keychain.pointee = SecKeychain(daemonName: try KeywellClient.default.defaultKeychain())
    }
}

/// nil keeps the current default (Apple resolves NULL to the default itself), or reports
/// errSecNoDefaultKeychain when there is none.
///
/// Apple's `SecKeychainSetDefault`.
///
/// ```swift
/// var work: SecKeychain?
/// _ = SecKeychainOpen("work", &work)
/// let status = SecKeychainSetDefault(work)
/// ```
///
/// - Returns: `errSecSuccess`; `errSecNoSuchKeychain` for a keychain that does not exist.
public func SecKeychainSetDefault(_ keychain: SecKeychain?) -> OSStatus {
    osStatus { () throws(KeychainError) in
        let name = try KeychainArguments.resolve(keychain)
        if keychain != nil { try KeywellClient.default.setDefaultKeychain(name) }
    }
}

/// The search list as a CFArray of `SecKeychain`.
///
/// Apple's `SecKeychainCopySearchList`: the keychains a search without `kSecUseKeychain`
/// looks in, in order.
///
/// ```swift
/// var list: CFArray?
/// _ = SecKeychainCopySearchList(&list)
/// let names = (list as? [SecKeychain])?.map(\.nameOrPath)   // ["login", "work"]
/// ```
///
/// - Returns: `errSecSuccess` with `searchList` set.
public func SecKeychainCopySearchList(_ searchList: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    osStatus { () throws(KeychainError) in
        let names = try KeywellClient.default.searchList()
        searchList.pointee = names.map { SecKeychain(daemonName: $0) } as NSArray
    }
}

/// Replaces the search list; keychains that do not exist yet are accepted (macOS).
///
/// Apple's `SecKeychainSetSearchList`. The list is capped (`ServiceLimits`); a longer one is
/// errSecParam.
///
/// ```swift
/// var login: SecKeychain?, work: SecKeychain?
/// _ = SecKeychainOpen("login", &login)
/// _ = SecKeychainOpen("work", &work)
/// let status = SecKeychainSetSearchList([login!, work!] as CFArray)
/// ```
///
/// - Returns: `errSecSuccess`; `errSecParam` for something that is not a keychain.
public func SecKeychainSetSearchList(_ searchList: CFArray) -> OSStatus {
    osStatus { () throws(KeychainError) in
        let keychains = try KeychainArguments.keychains(in: searchList)
        try KeywellClient.default.setSearchList(keychains.map(\.nameOrPath))
    }
}

/// Locks one keychain (nil: the default): its key leaves keywelld's memory until the next unlock.
///
/// Apple's `SecKeychainLock`.
///
/// ```swift
/// let status = SecKeychainLock(nil)   // the default keychain
/// ```
///
/// - Returns: `errSecSuccess`, also for a keychain already locked; `errSecNoSuchKeychain`.
public func SecKeychainLock(_ keychain: SecKeychain?) -> OSStatus {
    osStatus { () throws(KeychainError) in
        try KeywellClient.default.lock(KeychainArguments.resolve(keychain))
    }
}

/// Locks every keychain keywelld has open.
///
/// Apple's `SecKeychainLockAll`.
///
/// ```swift
/// let status = SecKeychainLockAll()
/// ```
///
/// - Returns: `errSecSuccess`; `errSecNotAvailable` when keywelld cannot be reached.
public func SecKeychainLockAll() -> OSStatus {
    osStatus { () throws(KeychainError) in try KeywellClient.default.lockAll() }
}

/// Unlocks with the password given. `usePassword` false asks Apple's UI for it: an unlocked
/// keychain needs no prompt and succeeds, a locked one is errSecInteractionNotAllowed.
/// A wrong password is errSecAuthFailed, also for an unlocked keychain (Keywell always checks).
///
/// Apple's `SecKeychainUnlock`.
///
/// ```swift
/// var work: SecKeychain?
/// _ = SecKeychainOpen("work", &work)
/// let password = Array("correct horse".utf8)
/// let status = SecKeychainUnlock(work, UInt32(password.count), password, true)
/// ```
///
/// - Returns: `errSecSuccess`; `errSecAuthFailed` for a wrong password (repeated failures are
///   slowed down by keywelld); `errSecNoSuchKeychain`.
public func SecKeychainUnlock(_ keychain: SecKeychain?, _ passwordLength: UInt32, _ password: UnsafeRawPointer?,
                              _ usePassword: Bool) -> OSStatus {
    osStatus { () throws(KeychainError) in
        let client = KeywellClient.default
        let name = try KeychainArguments.resolve(keychain)
        guard usePassword else {
            guard try client.info(name).locked == false else {
                throw KeychainError(SecStatus.interactionNotAllowed, detail: "no UI to prompt for the password")
            }
            return
        }
        let secret = try PasswordBytes.copy(password, length: passwordLength)
        try client.unlock(name, password: secret)
    }
}

/// kSecReadPermStatus, plus kSecUnlockStateStatus | kSecWritePermStatus when unlocked (what
/// Apple's implementation reports).
///
/// Apple's `SecKeychainGetStatus`.
///
/// ```swift
/// var status = SecKeychainStatus(0)
/// _ = SecKeychainGetStatus(nil, &status)
/// let unlocked = status & SecKeychainStatus(kSecUnlockStateStatus) != 0
/// ```
///
/// - Returns: `errSecSuccess` with the flags set; `errSecNoSuchKeychain`.
public func SecKeychainGetStatus(_ keychain: SecKeychain?, _ keychainStatus: UnsafeMutablePointer<SecKeychainStatus>) -> OSStatus {
    osStatus { () throws(KeychainError) in
        let info = try KeywellClient.default.info(KeychainArguments.resolve(keychain))
        var status = SecKeychainStatus(kSecReadPermStatus)
        if !info.locked { status |= SecKeychainStatus(kSecUnlockStateStatus | kSecWritePermStatus) }
        keychainStatus.pointee = status
    }
}

/// The login keychain; errSecNoSuchKeychain until it exists.
///
/// Apple's `SecKeychainCopyLogin`. The login keychain is the one PAM unlocks with the login
/// password (see pam/README.md).
///
/// ```swift
/// var login: SecKeychain?
/// let status = SecKeychainCopyLogin(&login)
/// ```
///
/// - Returns: `errSecSuccess` with `keychain` set; `errSecNoSuchKeychain`.
public func SecKeychainCopyLogin(_ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
    osStatus { () throws(KeychainError) in
        keychain.pointee = SecKeychain(daemonName: try KeywellClient.default.loginKeychain())
    }
}

/// The keychain file's absolute path, NUL-terminated. On entry `ioPathLength` is the buffer's
/// size; on return the path's length without the NUL. A buffer without room for the path and
/// its NUL is errSecBufferTooSmall (with the needed length set), as in Apple's implementation.
///
/// Apple's `SecKeychainGetPath`.
///
/// ```swift
/// var path = [CChar](repeating: 0, count: 4096)
/// var length = UInt32(path.count)
/// if SecKeychainGetPath(nil, &length, &path) == errSecSuccess { print(String(cString: path)) }
/// ```
///
/// - Returns: `errSecSuccess`; `errSecBufferTooSmall`; `errSecNoSuchKeychain`.
public func SecKeychainGetPath(_ keychain: SecKeychain?, _ ioPathLength: UnsafeMutablePointer<UInt32>,
                               _ pathName: UnsafeMutablePointer<CChar>) -> OSStatus {
    osStatus { () throws(KeychainError) in
        let path = try KeychainArguments.path(of: KeychainArguments.resolve(keychain))
        let bytes = Array(path.utf8)
        let capacity = ioPathLength.pointee
        ioPathLength.pointee = UInt32(bytes.count)
        guard UInt64(bytes.count) + 1 <= UInt64(capacity) else { throw KeychainError(SecStatus.bufferTooSmall) }
        for (index, byte) in bytes.enumerated() { pathName[index] = CChar(bitPattern: byte) }
        pathName[bytes.count] = 0
    }
}

/// Fills in `lockOnSleep` and `lockInterval` (INT32_MAX = never) of a version-1 struct;
/// another version is errSecParam. Like Apple's, it leaves `useLockInterval` alone. Works while
/// the keychain is locked (macOS would need to prompt).
///
/// Apple's `SecKeychainCopySettings`.
///
/// ```swift
/// var settings = SecKeychainSettings()   // version 1
/// if SecKeychainCopySettings(nil, &settings) == errSecSuccess {
///     print(settings.lockOnSleep.boolValue, settings.lockInterval)
/// }
/// ```
///
/// - Returns: `errSecSuccess`; `errSecParam` for another struct version; `errSecNoSuchKeychain`.
public func SecKeychainCopySettings(_ keychain: SecKeychain?, _ outSettings: UnsafeMutablePointer<SecKeychainSettings>) -> OSStatus {
    osStatus { () throws(KeychainError) in
        guard outSettings.pointee.version == UInt32(SEC_KEYCHAIN_SETTINGS_VERS1) else {
            throw .param("SecKeychainSettings version \(outSettings.pointee.version)")
        }
        let info = try KeywellClient.default.info(KeychainArguments.resolve(keychain))
        outSettings.pointee.lockOnSleep = DarwinBoolean(info.lockOnSleep)
        outSettings.pointee.lockInterval = KeychainArguments.appleLockInterval(info.lockAfterSeconds)
    }
}

/// Sets both settings from a version-1 struct. As in Apple's implementation `lockInterval`
/// alone decides (`useLockInterval` is not read); INT32_MAX or more, or 0, means never.
///
/// Apple's `SecKeychainSetSettings`.
///
/// ```swift
/// var settings = SecKeychainSettings(version: UInt32(SEC_KEYCHAIN_SETTINGS_VERS1), lockOnSleep: true,
///                                    useLockInterval: true, lockInterval: 600)
/// let status = SecKeychainSetSettings(nil, &settings)   // lock after 10 idle minutes, and on sleep
/// ```
///
/// - Returns: `errSecSuccess`; `errSecParam` for another struct version; `errSecNoSuchKeychain`.
public func SecKeychainSetSettings(_ keychain: SecKeychain?, _ newSettings: UnsafePointer<SecKeychainSettings>) -> OSStatus {
    osStatus { () throws(KeychainError) in
        let settings = newSettings.pointee
        guard settings.version == UInt32(SEC_KEYCHAIN_SETTINGS_VERS1) else {
            throw .param("SecKeychainSettings version \(settings.version)")
        }
        try KeywellClient.default.setSettings(KeychainArguments.resolve(keychain),
                                              lockOnSleep: settings.lockOnSleep.boolValue,
                                              lockAfterSeconds: KeychainArguments.keywellLockAfterSeconds(settings.lockInterval))
    }
}

/// Re-wraps the keychain's key from the old password to the new one; a wrong old password is
/// errSecAuthFailed. The lock state stays as it was.
///
/// Apple's `SecKeychainChangePassword`. Both passwords are copied, sent over D-Bus to
/// keywelld and wiped.
///
/// ```swift
/// let old = Array("correct horse".utf8), new = Array("battery staple".utf8)
/// let status = SecKeychainChangePassword(nil, UInt32(old.count), old, UInt32(new.count), new)
/// ```
///
/// - Returns: `errSecSuccess`; `errSecAuthFailed` for a wrong old password; `errSecNoSuchKeychain`.
public func SecKeychainChangePassword(_ keychain: SecKeychain?, _ oldPasswordLength: UInt32, _ oldPassword: UnsafeRawPointer?,
                                      _ newPasswordLength: UInt32, _ newPassword: UnsafeRawPointer?) -> OSStatus {
    osStatus { () throws(KeychainError) in
        let name = try KeychainArguments.resolve(keychain)
        let old = try PasswordBytes.copy(oldPassword, length: oldPasswordLength)
        let new = try PasswordBytes.copy(newPassword, length: newPasswordLength)
        try KeywellClient.default.changePassword(name, oldPassword: old, newPassword: new)
    }
}
