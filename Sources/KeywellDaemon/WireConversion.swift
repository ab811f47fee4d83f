import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol

/// Maps native-API dictionaries between D-Bus (`a{sv}`) and the engine's `WireDictionary`.
///
/// In: integers of any D-Bus type → `.integer`, `s` → `.string`, `ay` → `.data`, `b` → `.bool`,
/// `as` → `.strings`; any other type, a repeated key or an oversized dictionary is `errSecParam`.
/// Out (fixed types, documented in dbus/org.keywell.Keychain1.xml): strings `s`, bytes `ay`, flags `b`,
/// string lists `as`, `port`/`itemCount`/`lockAfterSeconds` `u`, every other integer (`cdat`,
/// `mdat`: milliseconds since 1970) `x`.
enum WireConversion {
    /// Integer results that travel as `u` (everything else integer is `x`).
    static let unsignedKeys: Set<String> = ["port", KeychainInfoKey.itemCount, KeychainInfoKey.lockAfterSeconds]

    // MARK: D-Bus → engine

    static func wireDictionary(_ value: DBusValue) throws(KeychainError) -> WireDictionary {
        guard case .dictionary(let keySignature, let valueSignature, let entries) = value,
              keySignature == .string, valueSignature == .variant else {
            throw .param("expected a{sv}, got \(value.signature.rawValue)")
        }
        guard entries.count <= ServiceLimits.dictionaryEntries else {
            throw .param("a dictionary of \(entries.count) entries is larger than any valid one")
        }
        var result: WireDictionary = [:]
        result.reserveCapacity(entries.count)
        for entry in entries {
            guard let key = entry.key.stringValue, let content = entry.value.variantValue else {
                throw .param("expected a{sv}")
            }
            guard result[key] == nil else { throw .param("key \(key) appears twice") }
            result[key] = try wireValue(content, key: key)
        }
        return result
    }

    static func wireValue(_ value: DBusValue, key: String) throws(KeychainError) -> WireValue {
        switch value {
        case .string(let text): return .string(text)
        case .bool(let flag): return .bool(flag)
        case .bytes(let bytes): return .data(SecretWipe.wipingData(copying: bytes))  // may be a secret
        case .byte, .int16, .uint16, .int32, .uint32, .int64, .uint64:
            guard let number = value.integerValue else { throw .param("\(key) is out of range") }
            return .integer(number)
        case .array(let element, let elements) where element == .string:
            guard elements.count <= ServiceLimits.keychainListLength else {
                throw .param("\(key) has \(elements.count) entries; at most \(ServiceLimits.keychainListLength) are accepted")
            }
            return .strings(elements.compactMap(\.stringValue))
        case .array(let element, _) where element == .byte:
            guard let bytes = value.bytesValue else { throw .param("\(key) has the wrong type") }
            return .data(SecretWipe.wipingData(copying: bytes))
        default:
            throw .param("\(key) has the unsupported type \(value.signature.rawValue)")
        }
    }

    static func keychainList(_ value: DBusValue) throws(KeychainError) -> [String] {
        guard case .array(let element, let elements) = value, element == .string else {
            throw .param("expected as, got \(value.signature.rawValue)")
        }
        guard elements.count <= ServiceLimits.keychainListLength else {
            throw .param("\(elements.count) keychains; at most \(ServiceLimits.keychainListLength) are accepted")
        }
        return elements.compactMap(\.stringValue)
    }

    // MARK: engine → D-Bus

    static func dbusDictionary(_ dictionary: WireDictionary) -> DBusValue {
        .dictionary(keySignature: .string, valueSignature: .variant, dictionary.keys.sorted().map { key in
            DBusDictEntry(key: .string(key), value: .variant(dbusValue(dictionary[key]!, key: key)))
        })
    }

    static func dbusDictionaryArray(_ dictionaries: [WireDictionary]) -> DBusValue {
        .array(elementSignature: .stringVariantDict, dictionaries.map(dbusDictionary))
    }

    static func dbusValue(_ value: WireValue, key: String) -> DBusValue {
        switch value {
        case .string(let text): return .string(text)
        case .data(let bytes): return .bytes(Array(bytes))
        case .bool(let flag): return .bool(flag)
        case .strings(let list): return .stringArray(list)
        case .integer(let number):
            if unsignedKeys.contains(key), let small = UInt32(exactly: number) { return .uint32(small) }
            return .int64(number)
        }
    }
}
