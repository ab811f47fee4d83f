import FoundationEssentials
import KeywellDBus
import KeywellProtocol

/// The one mapping between native-API wire values (`WireValue`, `WireDictionary`) and D-Bus
/// values, for both ends: the daemon reads requests and writes replies with it, KeychainServices
/// writes requests and reads replies (docs/native-api.md, "The contract").
///
/// Out (one form for requests and replies, documented in dbus/org.keywell.Keychain1.xml):
/// strings `s`, bytes `ay`, flags `b`, string lists `as`, `port`/`itemCount`/`lockAfterSeconds`
/// `u`, every other integer (`cdat`, `mdat`: milliseconds since 1970) `x`.
///
/// In, two strictnesses: a request (`request…`) is what any caller may send, so anything but the
/// types above (any integer type counts) is `errSecParam`, like a repeated key or an oversized
/// dictionary or list; a reply (`reply…`) comes from keywelld, so it is read leniently (variants
/// unwrapped, object paths as strings) and a shape it cannot be is `errSecIO`.
///
/// No Apple counterpart (Apple's clients talk to securityd over XPC).
///
/// ```swift
/// let request: WireDictionary = [WireKey.class: .string(ItemClass.genericPassword.rawValue), AttributeKey.account: .string("alice")]
/// let argument = WireCodec.dbusDictionary(request)                       // client side
/// let decoded = try WireCodec.requestDictionary(argument) { Data($0) }   // daemon side
/// assert(decoded == request)
/// ```
public enum WireCodec {
    /// Integer values that travel as `u` (everything else integer is `x`).
    public static let unsignedKeys: Set<String> = [AttributeKey.port, KeychainInfoKey.itemCount, KeychainInfoKey.lockAfterSeconds]

    // MARK: Wire values → D-Bus

    /// One value as it travels: `key` decides between `u` and `x` for integers (`unsignedKeys`).
    ///
    /// ```swift
    /// WireCodec.dbusValue(.integer(443), key: AttributeKey.port)   // .uint32(443)
    /// ```
    public static func dbusValue(_ value: WireValue, key: String) -> DBusValue {
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

    /// `a{sv}`, keys sorted, so the same dictionary always makes the same message.
    ///
    /// ```swift
    /// let argument = WireCodec.dbusDictionary([AttributeKey.service: .string("example.org")])
    /// ```
    public static func dbusDictionary(_ dictionary: WireDictionary) -> DBusValue {
        .dictionary(keySignature: .string, valueSignature: .variant, dictionary.keys.sorted().map { key in
            DBusDictEntry(key: .string(key), value: .variant(dbusValue(dictionary[key]!, key: key)))
        })
    }

    /// `aa{sv}`: the reply of a search with `m_Limit` all.
    ///
    /// ```swift
    /// let reply = WireCodec.dbusDictionaryArray(matches)
    /// ```
    public static func dbusDictionaryArray(_ dictionaries: [WireDictionary]) -> DBusValue {
        .array(elementSignature: .stringVariantDict, dictionaries.map(dbusDictionary))
    }

    // MARK: Requests (D-Bus → wire values, strict)

    /// An `a{sv}` argument. `secretData` makes every byte value's `Data` (they may be secrets:
    /// the daemon passes storage that wipes itself).
    ///
    /// ```swift
    /// let query = try WireCodec.requestDictionary(call.arguments[0]) { Data($0) }
    /// ```
    ///
    /// - Throws: `errSecParam` for another type, a repeated key, more than
    ///   `ServiceLimits.dictionaryEntries` entries, or a value `requestValue` refuses.
    public static func requestDictionary(
        _ value: DBusValue, secretData: ([UInt8]) -> Data
    ) throws(KeychainError) -> WireDictionary {
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
            if let refusal = ValueCap.attributeName.refusal(key.utf8.count, "a key") { throw .param(refusal) }
            guard result[key] == nil else { throw .param("key \(key) appears twice") }
            result[key] = try requestValue(content, key: key, secretData: secretData)
        }
        return result
    }

    /// One value of a request: strings, flags, bytes, string lists and integers of any width.
    ///
    /// ```swift
    /// let port = try WireCodec.requestValue(.uint16(443), key: AttributeKey.port) { Data($0) }   // .integer(443)
    /// ```
    ///
    /// - Throws: `errSecParam` for any other type, a list longer than
    ///   `ServiceLimits.keychainListLength`, or a value over its byte cap (`requestValueCap`),
    ///   refused before it is copied.
    public static func requestValue(
        _ value: DBusValue, key: String, secretData: ([UInt8]) -> Data
    ) throws(KeychainError) -> WireValue {
        try checkSize(of: value, key: key)
        switch value {
        case .string(let text): return .string(text)
        case .bool(let flag): return .bool(flag)
        case .bytes(let bytes): return .data(secretData(bytes))
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
            return .data(secretData(bytes))
        default:
            throw .param("\(key) has the unsupported type \(value.signature.rawValue)")
        }
    }

    /// The byte cap of a request's value under `key`: the secret's, the label's, or any other
    /// value's (docs/native-api.md, "Limits").
    public static func requestValueCap(_ key: String) -> (cap: ValueCap, what: String) {
        switch key {
        case WireKey.valueData: (.secret, "the secret (\(key))")
        case AttributeKey.label: (.label, "the label (\(key))")
        default: (.attributeValue, "the value of \(key)")
        }
    }

    /// Strings, byte arrays and each string of a list against `requestValueCap(key)`.
    private static func checkSize(of value: DBusValue, key: String) throws(KeychainError) {
        let (cap, what) = requestValueCap(key)
        switch value {
        case .string(let text):
            if let refusal = cap.refusal(text.utf8.count, what) { throw .param(refusal) }
        case .bytes(let bytes):
            if let refusal = cap.refusal(bytes.count, what) { throw .param(refusal) }
        case .array(let element, let elements) where element == .byte:
            if let refusal = cap.refusal(elements.count, what) { throw .param(refusal) }
        case .array(let element, let elements) where element == .string:
            for case .string(let text) in elements {
                if let refusal = cap.refusal(text.utf8.count, "a string of \(key)") { throw .param(refusal) }
            }
        default:
            return
        }
    }

    /// An `as` argument naming keychains (`SetSearchList`).
    ///
    /// ```swift
    /// let names = try WireCodec.requestKeychainList(.stringArray(["login", "work"]))
    /// ```
    ///
    /// - Throws: `errSecParam` for another type, more than `ServiceLimits.keychainListLength`
    ///   names, or one over `ServiceLimits.bytesPerKeychainName`.
    public static func requestKeychainList(_ value: DBusValue) throws(KeychainError) -> [String] {
        guard case .array(let element, let elements) = value, element == .string else {
            throw .param("expected as, got \(value.signature.rawValue)")
        }
        guard elements.count <= ServiceLimits.keychainListLength else {
            throw .param("\(elements.count) keychains; at most \(ServiceLimits.keychainListLength) are accepted")
        }
        for case .string(let name) in elements {
            if let refusal = ValueCap.keychainName.refusal(name.utf8.count, "a keychain name") { throw .param(refusal) }
        }
        return elements.compactMap(\.stringValue)
    }

    // MARK: Replies (D-Bus → wire values, lenient)

    /// Any D-Bus value the native API can send back; nil for types it never uses.
    ///
    /// ```swift
    /// WireCodec.replyValue(.variant(.uint32(3)))   // .integer(3)
    /// ```
    public static func replyValue(_ value: DBusValue) -> WireValue? {
        let value = value.unwrappingVariants
        switch value {
        case .string(let text), .objectPath(let text): return .string(text)
        case .bool(let flag): return .bool(flag)
        case .bytes: return value.bytesValue.map { .data(Data($0)) }
        case .array(let element, _) where element == .byte: return value.bytesValue.map { .data(Data($0)) }
        case .array(let element, _) where element == .string: return value.stringArrayValue.map(WireValue.strings)
        default:
            // Integers of any width (the daemon may pick `u`, `x`, `t`, …).
            return value.integerValue.map(WireValue.integer)
        }
    }

    /// An `a{sv}` reply of `method`.
    ///
    /// ```swift
    /// let reply = try connection.call(…, member: NativeMethod.add.name, arguments: [argument])
    /// let item = try WireCodec.replyDictionary(reply.first, of: .add)
    /// ```
    ///
    /// - Throws: `errSecIO` when the reply has another shape (see `unexpectedReply`).
    public static func replyDictionary(_ value: DBusValue?, of method: NativeMethod) throws(KeychainError) -> WireDictionary {
        guard let dictionary = value?.asStringVariantDict() else { throw unexpectedReply(method, value) }
        var result: WireDictionary = [:]
        result.reserveCapacity(dictionary.count)
        for (key, entry) in dictionary {
            guard let converted = replyValue(entry) else { throw unexpectedReply(method, entry, key: key) }
            result[key] = converted
        }
        return result
    }

    /// The `errSecIO` error for a reply of the wrong shape, naming the method and, if given, the key.
    ///
    /// ```swift
    /// guard let names = reply.first?.stringArrayValue else { throw WireCodec.unexpectedReply(.getSearchList, reply.first) }
    /// ```
    public static func unexpectedReply(_ method: NativeMethod, _ value: DBusValue?, key: String? = nil) -> KeychainError {
        let place = key.map { "\(method.name) reply key \($0)" } ?? "\(method.name) reply"
        let shape = value.map { "type \($0.signature.rawValue)" } ?? "no value"
        return KeychainError(SecStatus.io, detail: "unexpected \(place): \(shape)")
    }
}
