import Foundation
import KeywellProtocol

/// Which SecItem argument a dictionary is: the keys allowed and the meaning of a few values
/// (`kSecAttrSynchronizable`) depend on it.
enum DictionaryRole {
    /// `SecItemAdd`'s attributes.
    case add
    /// The query of `SecItemCopyMatching`, `SecItemUpdate` or `SecItemDelete`.
    case query
    /// `SecItemUpdate`'s attributesToUpdate.
    case attributesToUpdate
}

/// Apple's SecItem dictionaries (CF/Foundation values) → native-API wire dictionaries.
///
/// Values become `.string`, `.data`, `.bool` or `.integer`; dates become milliseconds since
/// 1970; `SecKeychain`s become their name or path. A value that has no wire form is
/// `errSecParam`, like Apple's SecItem with a value of the wrong CF type. Keys the daemon does
/// not know travel unchanged so that it reports them (`errSecParam`), except the few Apple keys
/// that only steer Apple's own machinery and mean nothing here, which are dropped.
enum ValueConversion {
    /// Keys whose value is a boolean, so an NSNumber 0/1 (`NSNumber(value: 1)`) counts as one.
    static let booleanKeys: Set<String> = [
        WireKey.returnData, WireKey.returnAttributes, WireKey.returnPersistentRef, kSecReturnRef,
        WireKey.matchCaseInsensitive, kSecAttrIsInvisible, kSecAttrIsNegative,
        kSecAttrSynchronizable, kSecUseDataProtectionKeychain, kSecUseNoAuthenticationUI,
    ]

    /// Apple keys that choose between Apple's implementations or give its prompt's text; Keywell
    /// has one implementation and its own words, so any value means the same as none.
    static let ignoredKeys: Set<String> = [kSecUseDataProtectionKeychain, kSecUseOperationPrompt]

    static func wireDictionary(_ dictionary: CFDictionary, role: DictionaryRole) throws(KeychainError) -> WireDictionary {
        var result: WireDictionary = [:]
        result.reserveCapacity(dictionary.count)
        for (anyKey, anyValue) in dictionary {
            guard let key = anyKey as? String else {
                throw .param("a dictionary key is not a string: \(type(of: anyKey))")
            }
            guard !ignoredKeys.contains(key) else { continue }
            let value = unwrapOptional(anyValue)
            switch key {
            case kSecAttrSynchronizable:
                try checkSynchronizable(value, role: role)
            case kSecReturnRef:
                // Keywell has no item-reference objects; asking for none is fine.
                guard try boolean(value, key) == false else { throw .param("kSecReturnRef is not supported: there are no item references") }
            case kSecValueRef:
                throw .param("kSecValueRef is not supported: there are no item references")
            case kSecUseNoAuthenticationUI:
                // The older form of kSecUseAuthenticationUIFail.
                if try boolean(value, key) { result[WireKey.useAuthenticationUI] = .string(WireKey.useAuthenticationUIFail) }
            case WireKey.useKeychain:
                result[key] = .string(try keychainIdentifier(value, key))
            case WireKey.matchSearchList:
                result[key] = .strings(try keychainIdentifiers(value, key))
            default:
                result[key] = try wireValue(value, forKey: key)
            }
        }
        return result
    }

    /// One value by its runtime type (the key only settles an NSNumber's bool-or-integer).
    static func wireValue(_ value: Any, forKey key: String) throws(KeychainError) -> WireValue {
        let value = unwrapOptional(value)
        switch value {
        case let text as String:
            return .string(text)
        case let bytes as Data:
            return .data(bytes)
        case let date as Date:
            return .integer(milliseconds(since1970: date))
        case let keychain as SecKeychain:
            return .string(keychain.nameOrPath)
        case let access as SecAccess:
            return access.list.wireValue
        case let number as NSNumber:
            if booleanKeys.contains(key) { return .bool(number.int64Value != 0) }
            if isBoolean(number) { return .bool(number.boolValue) }
            guard let integer = integer(number) else { throw .param("\(key): \(number) is not an integer") }
            return .integer(integer)
        case let list as [Any]:
            var strings: [String] = []
            for element in list {
                guard let text = unwrapOptional(element) as? String else { throw .param("\(key): an array element is not a string") }
                strings.append(text)
            }
            return .strings(strings)
        default:
            throw .param("\(key): a \(type(of: value)) value has no keychain form")
        }
    }

    // MARK: Special keys

    /// Every Keywell item is non-synchronizable (there is no cloud keychain): false and
    /// `kSecAttrSynchronizableAny` are what every item already is and are dropped; true asks for
    /// an item that cannot exist, so adding or updating to it is `errSecParam` and a query for
    /// it finds nothing (`errSecItemNotFound`).
    private static func checkSynchronizable(_ value: Any, role: DictionaryRole) throws(KeychainError) {
        if let text = value as? String, text == kSecAttrSynchronizableAny {
            guard role == .query else { throw .param("kSecAttrSynchronizableAny is only for queries") }
            return
        }
        guard try boolean(value, kSecAttrSynchronizable) else { return }
        if role == .query { throw KeychainError(SecStatus.itemNotFound, detail: "no item is synchronizable") }
        throw .param("synchronizable items are not supported")
    }

    private static func keychainIdentifier(_ value: Any, _ key: String) throws(KeychainError) -> String {
        switch value {
        case let keychain as SecKeychain: return keychain.nameOrPath
        case let text as String: return text
        default: throw .param("\(key) must be a SecKeychain, not \(type(of: value))")
        }
    }

    private static func keychainIdentifiers(_ value: Any, _ key: String) throws(KeychainError) -> [String] {
        let elements: [Any]
        switch value {
        case let list as [Any]: elements = list
        case let keychain as SecKeychain: elements = [keychain]
        default: throw .param("\(key) must be an array of SecKeychain, not \(type(of: value))")
        }
        var identifiers: [String] = []
        for element in elements {
            identifiers.append(try keychainIdentifier(unwrapOptional(element), key))
        }
        return identifiers
    }

    // MARK: Helpers

    private static func boolean(_ value: Any, _ key: String) throws(KeychainError) -> Bool {
        switch value {
        case let flag as Bool: return flag
        case let number as NSNumber: return number.int64Value != 0
        default: throw .param("\(key) must be a boolean")
        }
    }

    /// An NSNumber made from a Bool (CFBoolean on Apple platforms, objCType `c` here).
    static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }

    private static func integer(_ number: NSNumber) -> Int64? {
        switch String(cString: number.objCType) {
        case "f", "d":
            let double = number.doubleValue
            return double.rounded() == double ? Int64(exactly: double) : nil
        case "Q":
            return Int64(exactly: number.uint64Value)
        default:
            return number.int64Value
        }
    }

    static func milliseconds(since1970 date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// `Bool!` constants (`kCFBooleanTrue`) and optional values reach us wrapped in an Optional
    /// inside `Any`; Apple's CF bridging never shows one.
    static func unwrapOptional(_ value: Any) -> Any {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        guard let wrapped = mirror.children.first?.value else { return NSNull() }
        return unwrapOptional(wrapped)
    }
}
