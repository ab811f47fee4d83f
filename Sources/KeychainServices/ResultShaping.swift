import Foundation
import KeywellProtocol

/// What a SecItem call returns through its `result` pointer, shaped as Apple shapes it
/// (docs/native-api.md "KeychainServices"), from the native API's one-dictionary-per-match replies:
/// - no return type: nothing (nil);
/// - one of kSecReturnData / kSecReturnPersistentRef alone: that Data;
/// - kSecReturnAttributes alone: the attribute dictionary;
/// - several: one dictionary with the attributes (if asked) plus kSecValueData /
///   kSecValuePersistentRef;
/// - a limit other than one: an array of those.
struct ResultShape: Equatable {
    var returnsData = false
    var returnsAttributes = false
    var returnsPersistentRef = false
    /// Limit one: a single value rather than an array. Apple's default.
    var limitIsOne = true

    init(returnsData: Bool = false, returnsAttributes: Bool = false, returnsPersistentRef: Bool = false, limitIsOne: Bool = true) {
        self.returnsData = returnsData
        self.returnsAttributes = returnsAttributes
        self.returnsPersistentRef = returnsPersistentRef
        self.limitIsOne = limitIsOne
    }

    /// Reads the `r_*` and `m_Limit` keys of a converted query.
    init(query: WireDictionary) {
        returnsData = query[WireKey.returnData]?.boolValue ?? false
        returnsAttributes = query[WireKey.returnAttributes]?.boolValue ?? false
        returnsPersistentRef = query[WireKey.returnPersistentRef]?.boolValue ?? false
        switch query[WireKey.matchLimit] {
        case nil, .string(WireKey.matchLimitOne), .integer(1): limitIsOne = true
        default: limitIsOne = false
        }
    }

    var returnsNothing: Bool { !returnsData && !returnsAttributes && !returnsPersistentRef }

    private var returnTypeCount: Int {
        [returnsData, returnsAttributes, returnsPersistentRef].filter { $0 }.count
    }

    /// The `result` of `SecItemCopyMatching` for these matches (in the daemon's order).
    func copyMatchingResult(_ matches: [WireDictionary]) throws(KeychainError) -> CFTypeRef? {
        guard !returnsNothing else { return nil }
        if limitIsOne {
            guard let first = matches.first else { throw KeychainError(SecStatus.itemNotFound) }
            return try item(first)
        }
        var items: [Any] = []
        items.reserveCapacity(matches.count)
        for match in matches { items.append(try item(match)) }
        return items as NSArray
    }

    /// The `result` of `SecItemAdd`: the new item, shaped as a limit-one search.
    func addResult(_ reply: WireDictionary) throws(KeychainError) -> CFTypeRef? {
        guard !returnsNothing else { return nil }
        return try item(reply)
    }

    /// One match as Apple returns it.
    func item(_ match: WireDictionary) throws(KeychainError) -> AnyObject {
        if returnTypeCount == 1 {
            if returnsData { return try required(WireKey.valueData, in: match) as NSData }
            if returnsPersistentRef { return try required(WireKey.valuePersistentRef, in: match) as NSData }
        }
        var dictionary: [String: Any] = [:]
        if returnsAttributes {
            for (key, value) in match where key != WireKey.valueData && key != WireKey.valuePersistentRef {
                dictionary[key] = AppleValues.appleValue(value, forKey: key)
            }
        }
        if returnsData { dictionary[WireKey.valueData] = try required(WireKey.valueData, in: match) }
        if returnsPersistentRef { dictionary[WireKey.valuePersistentRef] = try required(WireKey.valuePersistentRef, in: match) }
        return dictionary as NSDictionary
    }

    private func required(_ key: String, in match: WireDictionary) throws(KeychainError) -> Data {
        switch match[key] {
        case .data(let bytes): return bytes
        // The daemon sends bytes; a UTF-8 string would be a daemon of another mind, still usable.
        case .string(let text): return Data(text.utf8)
        default: throw KeychainError(SecStatus.io, detail: "the daemon's reply has no \(key)")
        }
    }
}

/// Wire attribute values → the types Apple's SecItem returns for each attribute.
enum AppleValues {
    /// Attributes Apple returns as CFNumber four-character codes (FourCharCode, big-endian).
    static let fourCharCodeNumberKeys: Set<String> = [kSecAttrCreator, kSecAttrType]
    /// Attributes Apple returns as CFString four-character codes.
    static let fourCharCodeStringKeys: Set<String> = [kSecAttrProtocol, kSecAttrAuthenticationType]
    static let dateKeys: Set<String> = [kSecAttrCreationDate, kSecAttrModificationDate]
    static let booleanKeys: Set<String> = [kSecAttrIsInvisible, kSecAttrIsNegative]
    static let dataKeys: Set<String> = [kSecAttrGeneric, kSecValueData, kSecValuePersistentRef]

    static func appleValue(_ value: WireValue, forKey key: String) -> Any {
        if dateKeys.contains(key), let milliseconds = value.integerValue {
            return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        }
        if booleanKeys.contains(key) {
            if let flag = value.boolValue { return flag }
            if let number = value.integerValue { return number != 0 }
        }
        if fourCharCodeNumberKeys.contains(key) {
            if let text = value.stringValue, let code = fourCharCode(text) { return NSNumber(value: code) }
            if let number = value.integerValue, let code = UInt32(exactly: number) { return NSNumber(value: code) }
        }
        if fourCharCodeStringKeys.contains(key), let number = value.integerValue, let code = UInt32(exactly: number) {
            return fourCharCodeString(code)
        }
        if dataKeys.contains(key), let text = value.stringValue { return Data(text.utf8) }
        switch value {
        case .string(let text): return text
        case .data(let bytes):
            // Text attributes sent as UTF-8 `ay` (the daemon may) read as strings, as Apple's do.
            if !dataKeys.contains(key), let text = String(data: bytes, encoding: .utf8) { return text }
            return bytes
        case .bool(let flag): return flag
        case .integer(let number): return Int(exactly: number).map { NSNumber(value: $0) } ?? NSNumber(value: number)
        case .strings(let list): return list
        }
    }

    /// `"abcd"` → 0x61626364; nil unless exactly four bytes.
    static func fourCharCode(_ text: String) -> UInt32? {
        let bytes = Array(text.utf8)
        guard bytes.count == 4 else { return nil }
        return bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func fourCharCodeString(_ code: UInt32) -> String {
        let bytes = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: code >> $0) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
