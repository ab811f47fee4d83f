import KeywellSystem

/// Typed views of a value. Each returns nil when the value has another type, so hostile or
/// sloppy input becomes a nil (and then an `InvalidArgs`-style error) instead of a trap.
extension DBusValue {
    public var byteValue: UInt8? { if case .byte(let v) = self { v } else { nil } }
    public var boolValue: Bool? { if case .bool(let v) = self { v } else { nil } }
    public var int16Value: Int16? { if case .int16(let v) = self { v } else { nil } }
    public var uint16Value: UInt16? { if case .uint16(let v) = self { v } else { nil } }
    public var int32Value: Int32? { if case .int32(let v) = self { v } else { nil } }
    public var uint32Value: UInt32? { if case .uint32(let v) = self { v } else { nil } }
    public var int64Value: Int64? { if case .int64(let v) = self { v } else { nil } }
    public var uint64Value: UInt64? { if case .uint64(let v) = self { v } else { nil } }
    public var doubleValue: Double? { if case .double(let v) = self { v } else { nil } }
    public var stringValue: String? { if case .string(let v) = self { v } else { nil } }
    /// A string of a method marked `org.keywell.SecretStrings`, as it was decoded (never a `String`).
    public var secretStringValue: SecretBytes? { if case .secretString(let v) = self { v } else { nil } }
    public var objectPathValue: String? { if case .objectPath(let v) = self { v } else { nil } }
    public var signatureValue: DBusSignature? { if case .signature(let v) = self { v } else { nil } }
    public var unixFDValue: Int32? { if case .unixFD(let v) = self { v } else { nil } }
    /// The content of a variant (one level).
    public var variantValue: DBusValue? { if case .variant(let v) = self { v } else { nil } }
    public var structureFields: [DBusValue]? { if case .structure(let v) = self { v } else { nil } }

    /// The value with any variant wrappers removed.
    public var unwrappingVariants: DBusValue {
        var value = self
        while case .variant(let inner) = value { value = inner }
        return value
    }

    /// Any integer type (y n q i u x t) as Int64; nil for other types or a `t` above Int64.max.
    public var integerValue: Int64? {
        switch self {
        case .byte(let v): return Int64(v)
        case .int16(let v): return Int64(v)
        case .uint16(let v): return Int64(v)
        case .int32(let v): return Int64(v)
        case .uint32(let v): return Int64(v)
        case .int64(let v): return v
        case .uint64(let v): return Int64(exactly: v)
        default: return nil
        }
    }

    /// `ay` (either representation) as bytes.
    public var bytesValue: [UInt8]? {
        switch self {
        case .bytes(let v): return v
        case .array(let signature, let elements) where signature == .byte:
            var result: [UInt8] = []
            result.reserveCapacity(elements.count)
            for element in elements {
                guard case .byte(let b) = element else { return nil }
                result.append(b)
            }
            return result
        default: return nil
        }
    }

    /// The elements of any array except `ay` and dictionaries.
    public var arrayElements: [DBusValue]? { if case .array(_, let v) = self { v } else { nil } }

    /// `as` as strings.
    public var stringArrayValue: [String]? { mapElements(\.stringValue) }
    /// `ao` as object paths.
    public var objectPathArrayValue: [String]? { mapElements(\.objectPathValue) }

    /// The entries of any dictionary.
    public var dictionaryEntries: [DBusDictEntry]? { if case .dictionary(_, _, let v) = self { v } else { nil } }

    /// `a{sv}` as a Swift dictionary of the variants' contents. Nil if the value is not `a{sv}`.
    /// A repeated key keeps its last value.
    public func asStringVariantDict() -> [String: DBusValue]? {
        guard case .dictionary(let key, let value, let entries) = self, key == .string, value == .variant else { return nil }
        var result: [String: DBusValue] = [:]
        result.reserveCapacity(entries.count)
        for entry in entries {
            guard let k = entry.key.stringValue, let v = entry.value.variantValue else { return nil }
            result[k] = v
        }
        return result
    }

    /// `a{ss}` as a Swift dictionary. Nil if the value is not `a{ss}`.
    public func asStringStringDict() -> [String: String]? {
        guard case .dictionary(let key, let value, let entries) = self, key == .string, value == .string else { return nil }
        // Sized as it is made: `reserveCapacity` on an empty dictionary went through the
        // standard library's unspecialised resize, its generic metadata looked up on every
        // SearchItems (docs/performance.md, "The per-call path, counted again").
        var result = [String: String](minimumCapacity: entries.count)
        for entry in entries {
            guard let k = entry.key.stringValue, let v = entry.value.stringValue else { return nil }
            result[k] = v
        }
        return result
    }

    /// `aa{sv}` as an array of Swift dictionaries.
    public func asStringVariantDictArray() -> [[String: DBusValue]]? {
        guard case .array(let element, let items) = self, element == "a{sv}" else { return nil }
        var result: [[String: DBusValue]] = []
        result.reserveCapacity(items.count)
        for item in items {
            guard let dict = item.asStringVariantDict() else { return nil }
            result.append(dict)
        }
        return result
    }

    private func mapElements<T>(_ transform: (DBusValue) -> T?) -> [T]? {
        guard case .array(_, let elements) = self else { return nil }
        var result: [T] = []
        result.reserveCapacity(elements.count)
        for element in elements {
            guard let converted = transform(element) else { return nil }
            result.append(converted)
        }
        return result
    }
}

/// Builders for the shapes the Keywell APIs use.
extension DBusValue {
    public static func stringArray(_ strings: [String]) -> DBusValue {
        .array(elementSignature: .string, strings.map(DBusValue.string))
    }

    public static func objectPathArray(_ paths: [String]) -> DBusValue {
        .array(elementSignature: .objectPath, paths.map(DBusValue.objectPath))
    }

    /// `a{sv}`; keys are sorted so that the wire form is deterministic.
    public static func stringVariantDict(_ dict: [String: DBusValue]) -> DBusValue {
        .dictionary(keySignature: .string, valueSignature: .variant,
                    dict.keys.sorted().map { DBusDictEntry(key: .string($0), value: .variant(dict[$0]!)) })
    }

    /// `a{sv}` with entries in the given order.
    public static func stringVariantDict(_ pairs: [(String, DBusValue)]) -> DBusValue {
        .dictionary(keySignature: .string, valueSignature: .variant,
                    pairs.map { DBusDictEntry(key: .string($0.0), value: .variant($0.1)) })
    }

    /// `a{ss}`; keys are sorted.
    public static func stringStringDict(_ dict: [String: String]) -> DBusValue {
        .dictionary(keySignature: .string, valueSignature: .string,
                    dict.keys.sorted().map { DBusDictEntry(key: .string($0), value: .string(dict[$0]!)) })
    }

    /// `aa{sv}`.
    public static func stringVariantDictArray(_ dicts: [[String: DBusValue]]) -> DBusValue {
        .array(elementSignature: "a{sv}", dicts.map(stringVariantDict))
    }

    /// An empty array of the given element type (the type still travels).
    public static func emptyArray(of elementSignature: DBusSignature) -> DBusValue {
        .array(elementSignature: elementSignature, [])
    }
}

/// Argument-list helpers for method handlers: each throws `InvalidArgs` on a missing argument or
/// a wrong type, naming what was expected.
extension Array where Element == DBusValue {
    public func argument(_ index: Int) throws(DBusError) -> DBusValue {
        guard indices.contains(index) else { throw .invalidArgs("Missing argument \(index)") }
        return self[index]
    }

    public func string(at index: Int) throws(DBusError) -> String {
        try typed(index, "s") { $0.stringValue }
    }
    public func objectPath(at index: Int) throws(DBusError) -> String {
        try typed(index, "o") { $0.objectPathValue }
    }
    public func bool(at index: Int) throws(DBusError) -> Bool {
        try typed(index, "b") { $0.boolValue }
    }
    public func uint32(at index: Int) throws(DBusError) -> UInt32 {
        try typed(index, "u") { $0.uint32Value }
    }
    public func integer(at index: Int) throws(DBusError) -> Int64 {
        try typed(index, "an integer") { $0.integerValue }
    }
    public func bytes(at index: Int) throws(DBusError) -> [UInt8] {
        try typed(index, "ay") { $0.bytesValue }
    }
    public func stringArray(at index: Int) throws(DBusError) -> [String] {
        try typed(index, "as") { $0.stringArrayValue }
    }
    public func objectPathArray(at index: Int) throws(DBusError) -> [String] {
        try typed(index, "ao") { $0.objectPathArrayValue }
    }
    public func variant(at index: Int) throws(DBusError) -> DBusValue {
        try typed(index, "v") { $0.variantValue }
    }
    public func stringVariantDict(at index: Int) throws(DBusError) -> [String: DBusValue] {
        try typed(index, "a{sv}") { $0.asStringVariantDict() }
    }
    public func stringStringDict(at index: Int) throws(DBusError) -> [String: String] {
        try typed(index, "a{ss}") { $0.asStringStringDict() }
    }

    private func typed<T>(_ index: Int, _ expected: String, _ extract: (DBusValue) -> T?) throws(DBusError) -> T {
        let value = try argument(index)
        guard let result = extract(value) else {
            throw .invalidArgs("Argument \(index) should be \(expected), got \(value.signature.rawValue)")
        }
        return result
    }
}

extension Array where Element == DBusValue {
    /// An `i` argument (the signature was checked, so a mismatch is a bug of the caller's table).
    public func int32(at index: Int) throws(DBusError) -> Int32 {
        guard let value = try argument(index).int32Value else { throw .invalidArgs("Argument \(index) is not an int32") }
        return value
    }

    /// An `x` argument.
    public func int64(at index: Int) throws(DBusError) -> Int64 {
        guard let value = try argument(index).int64Value else { throw .invalidArgs("Argument \(index) is not an int64") }
        return value
    }
}
