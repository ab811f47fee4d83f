import Foundation
import KeywellProtocol

// Apple's SecItem functions with Apple's Swift signatures, over the native D-Bus API
// (through `KeywellClient.default`). Semantics: docs/native-api.md.

/// Adds an item. With `kSecReturn*` keys and a `result` pointer, the new item comes back as a
/// limit-one search would return it; without return keys `result` is set to nil (as the
/// data-protection keychain does).
///
/// Apple's `SecItemAdd(_:_:)`, with the same dictionary keys and status codes.
///
/// ```swift
/// let item = [kSecClass: kSecClassGenericPassword, kSecAttrService: "example.org",
///             kSecAttrAccount: "alice", kSecValueData: Data("s3cret".utf8)] as CFDictionary
/// let status = SecItemAdd(item, nil)
/// if status == errSecDuplicateItem { /* update it instead */ }
/// ```
///
/// - Returns: `errSecSuccess`; `errSecDuplicateItem` when an item with the same primary key
///   exists; `errSecParam` for a key or value Keywell does not take; `errSecNotAvailable` when
///   keywelld cannot be reached.
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    osStatus { () throws(KeychainError) in
        var wire = try ValueConversion.wireDictionary(attributes, role: .add)
        let shape = ResultShape(query: wire)
        if result == nil {
            // Nobody will look at the result: do not make the daemon read secrets for it.
            for key in [WireKey.returnData, WireKey.returnAttributes, WireKey.returnPersistentRef] { wire[key] = nil }
        }
        let reply = try KeywellClient.default.add(wire)
        if let result { result.pointee = try shape.addResult(reply) }
    }
}

/// Searches. The result's shape follows the return keys and `kSecMatchLimit` (default one);
/// no match is errSecItemNotFound. Asking for a return type without a `result` pointer is
/// errSecParam, as on Apple platforms.
///
/// Apple's `SecItemCopyMatching(_:_:)`.
///
/// ```swift
/// let query = [kSecClass: kSecClassGenericPassword, kSecAttrService: "example.org",
///              kSecAttrAccount: "alice", kSecReturnData: true] as CFDictionary
/// var result: CFTypeRef?
/// if SecItemCopyMatching(query, &result) == errSecSuccess, let data = result as? Data {
///     print(String(decoding: data, as: UTF8.self))
/// }
/// ```
///
/// - Returns: `errSecSuccess` with `result` set (a `Data`, an attributes dictionary, or an
///   array of them for `kSecMatchLimitAll`); `errSecItemNotFound` when nothing matches;
///   `errSecInteractionNotAllowed` when secrets were asked for and only locked keychains matched.
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    osStatus { () throws(KeychainError) in
        let wire = try ValueConversion.wireDictionary(query, role: .query)
        let shape = ResultShape(query: wire)
        if result == nil && !shape.returnsNothing {
            throw .param("a return type was asked for without a result pointer")
        }
        let matches = try KeywellClient.default.copyMatching(wire)
        if let result { result.pointee = try shape.copyMatchingResult(matches) }
    }
}

/// Changes every item that matches `query` (Keywell's documented choice; Apple's legacy
/// keychain changes only the first unless `kSecMatchLimitAll`).
///
/// Apple's `SecItemUpdate(_:_:)`. All matches change or none does.
///
/// ```swift
/// let query = [kSecClass: kSecClassGenericPassword, kSecAttrService: "example.org",
///              kSecAttrAccount: "alice"] as CFDictionary
/// let changes = [kSecValueData: Data("n3w".utf8)] as CFDictionary
/// let status = SecItemUpdate(query, changes)
/// ```
///
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when nothing matches; `errSecDuplicateItem`
///   when the change would give two items the same primary key.
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    osStatus { () throws(KeychainError) in
        let wireQuery = try ValueConversion.wireDictionary(query, role: .query)
        let changes = try ValueConversion.wireDictionary(attributesToUpdate, role: .attributesToUpdate)
        try KeywellClient.default.update(wireQuery, attributes: changes)
    }
}

/// Deletes every item that matches `query`.
///
/// Apple's `SecItemDelete(_:)`.
///
/// ```swift
/// let query = [kSecClass: kSecClassGenericPassword, kSecAttrService: "example.org"] as CFDictionary
/// let status = SecItemDelete(query)   // every item of that service
/// ```
///
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when nothing matches.
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    osStatus { () throws(KeychainError) in
        try KeywellClient.default.delete(ValueConversion.wireDictionary(query, role: .query))
    }
}

/// Apple's message for a status (the SecBase.h comment texts). Unknown codes get Apple's
/// generic sentence naming the number.
///
/// Apple's `SecCopyErrorMessageString(_:_:)`; `reserved` is ignored, as there.
///
/// ```swift
/// let status = SecItemCopyMatching(query, &result)
/// if status != errSecSuccess, let message = SecCopyErrorMessageString(status, nil) {
///     print("keychain: \(message)")   // "The specified item could not be found in the keychain."
/// }
/// ```
///
/// - Returns: the message; never nil.
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? {
    guard SecStatus.name(for: status) != nil else {
        return "The operation couldn\u{2019}t be completed. (OSStatus error \(status).)"
    }
    return SecStatus.message(for: status)
}
