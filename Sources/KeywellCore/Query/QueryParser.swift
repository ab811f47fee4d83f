import Foundation
import KeywellProtocol

/// Reads native-API dictionaries (docs/native-api.md "Malformed input"): a missing class or a wrong type is
/// `errSecParam`, an unknown class `errSecNoSuchClass`, an attribute of the other class
/// `errSecNoSuchAttr`, `cdat`/`mdat` in Add or Update `errSecReadOnlyAttr`, unknown keys `errSecParam`.
enum QueryParser {
    static func parseAdd(_ dictionary: WireDictionary) throws(KeychainError) -> NewItem {
        let itemClass = try requiredClass(dictionary)
        guard itemClass != .key else { throw .param("keys items are added through the SSH agent (keywell ssh-add)") }
        var item = NewItem(itemClass: itemClass, attributes: [:], secret: Data(), keychain: nil, returns: ReturnRequest())
        for (key, value) in dictionary.sortedByKey where key != WireKey.class {
            if let attribute = ItemAttribute.byName[key] {
                item.attributes[attribute] = try writableAttribute(attribute, value, itemClass: itemClass)
                continue
            }
            switch key {
            case WireKey.valueData: item.secret = try data(key, value)
            case WireKey.useKeychain: item.keychain = try string(key, value)
            case WireKey.access: item.access = try AccessList(wire: value)
            // Accepted for Apple's callers; Add never asks.
            case WireKey.useAuthenticationUI: _ = try interaction(value)
            default:
                guard try parseReturn(key, value, into: &item.returns) else { throw unknownKey(key, in: NativeMethod.add.name) }
            }
        }
        return item
    }

    static func parseQuery(_ dictionary: WireDictionary, for operation: NativeMethod) throws(KeychainError) -> ItemQuery {
        let itemClass = try dictionary[WireKey.class].map { value throws(KeychainError) in try ItemClass.parse(value) }
        var query = ItemQuery(filter: ItemFilter(itemClass: itemClass))
        var searchList: [String]?
        var keychain: String?
        for (key, value) in dictionary.sortedByKey where key != WireKey.class {
            if let attribute = ItemAttribute.byName[key] {
                if let itemClass, !attribute.belongs(to: itemClass) { throw noSuchAttribute(attribute, itemClass) }
                query.filter.attributes[attribute] = try attribute.parse(value)
                continue
            }
            switch key {
            case WireKey.valuePersistentRef:
                query.persistentRef = try PersistentRef(parsing: data(key, value))
            case WireKey.matchLimit:
                query.limit = try limit(value)
            case WireKey.matchCaseInsensitive:
                query.filter.caseInsensitive = try bool(key, value)
            case WireKey.matchSearchList:
                guard let list = value.stringsValue else { throw .param("\(key) must be an array of strings") }
                searchList = list
            case WireKey.useKeychain:
                keychain = try string(key, value)
            case WireKey.useAuthenticationUI:
                query.interaction = try interaction(value)
            case WireKey.returnData, WireKey.returnAttributes, WireKey.returnPersistentRef, WireKey.returnAccess,
                 WireKey.returnSecretServiceAttributes, WireKey.returnKeychain:
                guard operation != .update else { throw .param("\(key) is not allowed in an Update query") }
                _ = try parseReturn(key, value, into: &query.returns)
            default:
                throw unknownKey(key, in: operation.name)
            }
        }
        guard itemClass != nil || query.persistentRef != nil else { throw .param("the query has no class") }
        query.filter.itemUUID = query.persistentRef?.item
        // u_Keychain wins over m_SearchList.
        if let keychain {
            query.scope = .keychain(keychain)
        } else if let searchList {
            query.scope = .list(searchList)
        }
        return query
    }

    /// `attributesToUpdate`. Attributes are checked against the query's class when it has one;
    /// a query by reference alone is checked per item (`ItemChanges.apply`).
    static func parseChanges(_ dictionary: WireDictionary, itemClass: ItemClass?) throws(KeychainError) -> ItemChanges {
        var changes = ItemChanges()
        for (key, value) in dictionary.sortedByKey {
            if let attribute = ItemAttribute.byName[key] {
                changes.attributes[attribute] = try writableAttribute(attribute, value, itemClass: itemClass)
            } else if key == WireKey.valueData {
                changes.secret = try data(key, value)
            } else if key == WireKey.access {
                changes.access = try AccessList(wire: value)
            } else {
                throw unknownKey(key, in: "the attributes to update")
            }
        }
        return changes
    }

    static func noSuchAttribute(_ attribute: ItemAttribute, _ itemClass: ItemClass) -> KeychainError {
        KeychainError(SecStatus.noSuchAttr, detail: "\(itemClass.rawValue) items have no \(attribute.name) attribute")
    }

    private static func requiredClass(_ dictionary: WireDictionary) throws(KeychainError) -> ItemClass {
        guard let value = dictionary[WireKey.class] else { throw .param("the dictionary has no class") }
        return try ItemClass.parse(value)
    }

    private static func writableAttribute(
        _ attribute: ItemAttribute, _ value: WireValue, itemClass: ItemClass?
    ) throws(KeychainError) -> AttributeValue {
        guard !attribute.isReadOnly else {
            throw KeychainError(SecStatus.readOnlyAttr, detail: "\(attribute.name) is set by the keychain")
        }
        if let itemClass, !attribute.belongs(to: itemClass) { throw noSuchAttribute(attribute, itemClass) }
        return try attribute.parse(value)
    }

    /// Reads an `r_*` key; false when `key` is not one.
    private static func parseReturn(_ key: String, _ value: WireValue, into returns: inout ReturnRequest) throws(KeychainError) -> Bool {
        switch key {
        case WireKey.returnData: returns.data = try bool(key, value)
        case WireKey.returnAttributes: returns.attributes = try bool(key, value)
        case WireKey.returnPersistentRef: returns.persistentRef = try bool(key, value)
        case WireKey.returnAccess: returns.access = try bool(key, value)
        case WireKey.returnSecretServiceAttributes: returns.secretServiceAttributes = try bool(key, value)
        case WireKey.returnKeychain: returns.keychain = try bool(key, value)
        default: return false
        }
        return true
    }

    private static func interaction(_ value: WireValue) throws(KeychainError) -> UserInteraction {
        switch value {
        case .string(WireKey.useAuthenticationUIAllow): return .allow
        case .string(WireKey.useAuthenticationUIFail): return .fail
        case .string(WireKey.useAuthenticationUISkip): return .skip
        default:
            throw .param("\(WireKey.useAuthenticationUI) must be \(WireKey.useAuthenticationUIAllow), "
                + "\(WireKey.useAuthenticationUIFail) or \(WireKey.useAuthenticationUISkip)")
        }
    }

    private static func limit(_ value: WireValue) throws(KeychainError) -> MatchLimit {
        switch value {
        case .string(WireKey.matchLimitOne): return .one
        case .string(WireKey.matchLimitAll): return .all
        case .integer(let count) where count >= 1: return count > Int64(Int32.max) ? .all : .count(Int(count))
        default: throw .param("m_Limit must be m_LimitOne, m_LimitAll or a positive count")
        }
    }

    private static func unknownKey(_ key: String, in place: String) -> KeychainError {
        .param("\(key) is not allowed in \(place)")
    }

    private static func bool(_ key: String, _ value: WireValue) throws(KeychainError) -> Bool {
        guard let flag = value.boolValue else { throw .param("\(key) must be a boolean") }
        return flag
    }

    private static func string(_ key: String, _ value: WireValue) throws(KeychainError) -> String {
        guard let text = value.stringValue else { throw .param("\(key) must be a string") }
        return text
    }

    private static func data(_ key: String, _ value: WireValue) throws(KeychainError) -> Data {
        guard let bytes = value.dataValue else { throw .param("\(key) must be bytes") }
        return bytes
    }
}

extension WireDictionary {
    /// Keys in a fixed order, so that a dictionary with several faults always reports the same one.
    /// Only the keys are copied into the sorted list: values (secrets among them) stay in the
    /// caller's dictionary, which the daemon wipes after the request.
    fileprivate var sortedByKey: LazyMapSequence<[String], (key: String, value: WireValue)> {
        keys.sorted().lazy.map { (key: $0, value: self[$0]!) }
    }
}
