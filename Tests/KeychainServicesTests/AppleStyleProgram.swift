// Code written as it is written for Apple platforms, against Apple's Security framework.
// With `import KeychainServices` replaced by `import Security`, this file compiles on macOS
// unchanged: nothing Keywell-specific is used here. The tests in AppleStyleTests.swift run it
// against the real keywelld.
import Foundation
import KeychainServices

/// The password helper found in countless apps.
enum PasswordStore {
    static func save(service: String, account: String, password: String) -> OSStatus {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecValueData as String: password.data(using: .utf8)!,
        ]
        return SecItemAdd(query as CFDictionary, nil)
    }

    static func read(service: String, account: String) -> (OSStatus, String?) {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecReturnData as String: kCFBooleanTrue!,
            kSecMatchLimit as String: kSecMatchLimitOne,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        guard status == errSecSuccess, let data = item as? Data else { return (status, nil) }
        return (status, String(data: data, encoding: .utf8))
    }

    static func attributes(service: String, account: String) -> (OSStatus, [String: Any]?) {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecReturnAttributes as String: true,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        return (status, item as? [String: Any])
    }

    static func attributesAndPassword(service: String, account: String) -> (OSStatus, [String: Any]?) {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecReturnAttributes as String: true,
            kSecReturnData as String: true,
            kSecMatchLimit as String: kSecMatchLimitOne,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        return (status, item as? [String: Any])
    }

    static func update(service: String, account: String, password: String) -> OSStatus {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        let attributes: [String: Any] = [kSecValueData as String: password.data(using: .utf8)!]
        return SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
    }

    static func delete(service: String, account: String) -> OSStatus {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        return SecItemDelete(query as CFDictionary)
    }

    /// Add, or update when it is already there: the usual upsert.
    static func upsert(service: String, account: String, password: String) -> OSStatus {
        let status = save(service: service, account: account, password: password)
        if status == errSecDuplicateItem { return update(service: service, account: account, password: password) }
        return status
    }

    static func accounts(service: String) -> (OSStatus, [String]) {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecReturnAttributes as String: true,
            kSecMatchLimit as String: kSecMatchLimitAll,
        ]
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        guard status == errSecSuccess, let items = result as? [[String: Any]] else { return (status, []) }
        return (status, items.compactMap { $0[kSecAttrAccount as String] as? String }.sorted())
    }

    static func passwords(service: String, limit: Int? = nil) -> (OSStatus, [String]) {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecReturnData as String: true,
            kSecMatchLimit as String: kSecMatchLimitAll,
        ]
        if let limit { query[kSecMatchLimit as String] = limit }
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        guard status == errSecSuccess, let items = result as? [Data] else { return (status, []) }
        return (status, items.compactMap { String(data: $0, encoding: .utf8) }.sorted())
    }

    static func exists(service: String, account: String) -> (OSStatus, Bool) {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        return (status, result != nil)
    }

    static func message(_ status: OSStatus) -> String? {
        SecCopyErrorMessageString(status, nil) as String?
    }
}

/// Internet passwords with Apple's four-character constants.
enum WebCredentials {
    static func save(server: String, account: String, password: String) -> OSStatus {
        let attributes: [String: Any] = [
            kSecClass as String: kSecClassInternetPassword,
            kSecAttrServer as String: server,
            kSecAttrAccount as String: account,
            kSecAttrProtocol as String: kSecAttrProtocolHTTPS,
            kSecAttrAuthenticationType as String: kSecAttrAuthenticationTypeHTMLForm,
            kSecAttrPort as String: 443,
            kSecAttrPath as String: "/login",
            kSecAttrLabel as String: "\(server) (\(account))",
            kSecAttrComment as String: "saved by the test program",
            kSecAttrCreator as String: NSNumber(value: UInt32(0x6B_77_6C_6C)),  // 'kwll'
            kSecAttrIsInvisible as String: true,
            kSecValueData as String: Data(password.utf8),
        ]
        return SecItemAdd(attributes as CFDictionary, nil)
    }

    static func find(server: String) -> (OSStatus, [String: Any]?) {
        let query: [String: Any] = [
            kSecClass as String: kSecClassInternetPassword,
            kSecAttrServer as String: server,
            kSecAttrProtocol as String: kSecAttrProtocolHTTPS,
            kSecMatchLimit as String: kSecMatchLimitOne,
            kSecReturnAttributes as String: true,
            kSecReturnData as String: true,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        return (status, item as? [String: Any])
    }
}

/// Persistent references, as apps store them to find an item again.
enum PersistentReferences {
    static func addReturningReference(service: String, account: String) -> (OSStatus, Data?) {
        let attributes: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecValueData as String: Data("by-ref".utf8),
            kSecReturnPersistentRef as String: true,
        ]
        var result: CFTypeRef?
        let status = SecItemAdd(attributes as CFDictionary, &result)
        return (status, result as? Data)
    }

    static func password(for reference: Data) -> (OSStatus, String?) {
        let query: [String: Any] = [
            kSecValuePersistentRef as String: reference,
            kSecReturnData as String: true,
        ]
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        return (status, (result as? Data).flatMap { String(data: $0, encoding: .utf8) })
    }

    static func delete(_ reference: Data) -> OSStatus {
        SecItemDelete([kSecValuePersistentRef as String: reference] as CFDictionary)
    }
}

/// The (deprecated but widely used) SecKeychain calls of macOS tools.
enum Keychains {
    static func create(_ path: String, password: String) -> (OSStatus, SecKeychain?) {
        var keychain: SecKeychain?
        let status = SecKeychainCreate(path, UInt32(password.utf8.count), password, false, nil, &keychain)
        return (status, keychain)
    }

    static func open(_ path: String) -> SecKeychain? {
        var keychain: SecKeychain?
        guard SecKeychainOpen(path, &keychain) == errSecSuccess else { return nil }
        return keychain
    }

    static func unlock(_ keychain: SecKeychain?, password: String) -> OSStatus {
        SecKeychainUnlock(keychain, UInt32(password.utf8.count), password, true)
    }

    static func unlockWithPrompt(_ keychain: SecKeychain?) -> OSStatus {
        SecKeychainUnlock(keychain, 0, nil, false)
    }

    static func isUnlocked(_ keychain: SecKeychain?) -> (OSStatus, Bool, SecKeychainStatus) {
        var status = SecKeychainStatus()
        let result = SecKeychainGetStatus(keychain, &status)
        return (result, status & UInt32(kSecUnlockStateStatus) != 0, status)
    }

    static func path(_ keychain: SecKeychain?) -> (OSStatus, String?) {
        var length: UInt32 = 1024
        var buffer = [CChar](repeating: 0, count: 1024)
        let status = SecKeychainGetPath(keychain, &length, &buffer)
        guard status == errSecSuccess else { return (status, nil) }
        return (status, String(cString: buffer))
    }

    static func searchListPaths() -> (OSStatus, [String]) {
        var list: CFArray?
        let status = SecKeychainCopySearchList(&list)
        guard status == errSecSuccess, let keychains = list as? [SecKeychain] else { return (status, []) }
        return (status, keychains.compactMap { path($0).1 })
    }

    static func setSearchList(_ keychains: [SecKeychain]) -> OSStatus {
        SecKeychainSetSearchList(keychains as CFArray)
    }

    static func defaultKeychain() -> (OSStatus, SecKeychain?) {
        var keychain: SecKeychain?
        let status = SecKeychainCopyDefault(&keychain)
        return (status, keychain)
    }

    static func settings(_ keychain: SecKeychain?) -> (OSStatus, SecKeychainSettings) {
        var settings = SecKeychainSettings(version: UInt32(SEC_KEYCHAIN_SETTINGS_VERS1), lockOnSleep: false,
                                           useLockInterval: false, lockInterval: 0)
        let status = SecKeychainCopySettings(keychain, &settings)
        return (status, settings)
    }

    static func setSettings(_ keychain: SecKeychain?, lockOnSleep: Bool, lockInterval: UInt32) -> OSStatus {
        var settings = SecKeychainSettings(version: UInt32(SEC_KEYCHAIN_SETTINGS_VERS1),
                                           lockOnSleep: DarwinBoolean(lockOnSleep), useLockInterval: true,
                                           lockInterval: lockInterval)
        return SecKeychainSetSettings(keychain, &settings)
    }

    static func savePassword(in keychain: SecKeychain, service: String, account: String, password: String) -> OSStatus {
        let attributes: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecValueData as String: Data(password.utf8),
            kSecUseKeychain as String: keychain,
        ]
        return SecItemAdd(attributes as CFDictionary, nil)
    }

    static func readPassword(from keychains: [SecKeychain], service: String, account: String) -> (OSStatus, String?) {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecMatchSearchList as String: keychains,
            kSecReturnData as String: true,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        return (status, (item as? Data).flatMap { String(data: $0, encoding: .utf8) })
    }

    static func readAttributes(from keychains: [SecKeychain], service: String) -> (OSStatus, [String: Any]?) {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecMatchSearchList as String: keychains,
            kSecReturnAttributes as String: true,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        return (status, item as? [String: Any])
    }
}
