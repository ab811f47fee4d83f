import CDBus

/// A D-Bus type signature such as `a{sv}` or `(oayays)`.
///
/// String literals are accepted unchecked (they are the programmer's own); everything that
/// reaches libdbus is validated first, since libdbus aborts on invalid signatures.
public struct DBusSignature: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    /// Validates `rawValue` (any number of complete types, at most 255 bytes, nesting limits).
    public init(validating rawValue: String) throws(DBusError) {
        guard DBusSignature.isValid(rawValue) else {
            throw DBusError(name: DBusError.Name.invalidSignature, message: "Invalid signature \(rawValue.debugDescription)")
        }
        self.rawValue = rawValue
    }

    public init(unchecked rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }
    public var isEmpty: Bool { rawValue.isEmpty }
    public var isValid: Bool { DBusSignature.isValid(rawValue) }

    /// True when the signature is exactly one complete type (what a variant or array element holds).
    public var isSingleCompleteType: Bool {
        if let count = DBusSignature.flatCompleteTypes(rawValue) { return count == 1 }
        guard !rawValue.containsNUL else { return false }
        return rawValue.withCString { dbus_signature_validate_single($0, nil) } != 0
    }

    /// The complete types one after the other: `sa{sv}i` → `s`, `a{sv}`, `i`.
    /// Empty for an invalid signature.
    public var completeTypes: [DBusSignature] {
        guard isValid else { return [] }
        let bytes = Array(rawValue.utf8)
        var result: [DBusSignature] = []
        var index = 0
        while index < bytes.count {
            let end = DBusSignature.endOfCompleteType(bytes, from: index)
            result.append(DBusSignature(unchecked: String(decoding: bytes[index..<end], as: UTF8.self)))
            index = end
        }
        return result
    }

    /// For `a…` signatures: the element type (`a{sv}` → `{sv}`).
    public var arrayElement: DBusSignature? {
        guard rawValue.hasPrefix("a"), rawValue.count > 1 else { return nil }
        return DBusSignature(unchecked: String(rawValue.dropFirst()))
    }

    static func isValid(_ raw: String) -> Bool {
        if DBusSignature.flatCompleteTypes(raw) != nil { return raw.utf8.count <= maximumLength }
        if raw.containsNUL { return false }
        return raw.withCString { dbus_signature_validate($0, nil) } != 0
    }

    /// The longest signature the wire format allows.
    static let maximumLength = 255

    /// How many complete types a flat signature holds: one of basic types, variants, arrays of
    /// those, dictionaries of a basic key to one of those, and structs of any of these but a
    /// struct (`s`, `o`, `aoao`, `a{ss}`, `a{sv}`, `(oayays)`), all valid by the grammar alone
    /// and at most three levels deep. Nil for any other shape, which libdbus's validator judges.
    /// That validator keeps its stack of containers in a list whose links come from a pool
    /// behind a process-wide lock: two or more lock holds for every signature checked, and a
    /// reply checks its own and each array's element type (docs/performance.md, "The per-call
    /// path, counted again").
    static func flatCompleteTypes(_ raw: String) -> Int? {
        var raw = raw
        return raw.withUTF8 { bytes -> Int? in
            var count = 0
            var index = 0
            while index < bytes.count {
                if bytes[index] == UInt8(ascii: "(") {
                    // A struct of one or more flat fields.
                    index += 1
                    var fields = 0
                    while index < bytes.count, bytes[index] != UInt8(ascii: ")") {
                        guard let next = flatField(bytes, at: index) else { return nil }
                        index = next
                        fields += 1
                    }
                    guard fields > 0, index < bytes.count else { return nil }
                    index += 1
                } else {
                    guard let next = flatField(bytes, at: index) else { return nil }
                    index = next
                }
                count += 1
            }
            return count
        }
    }

    /// Past one basic type, variant, array of either or dictionary of a basic key to either,
    /// starting at `index`; nil for anything else.
    private static func flatField(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int? {
        let code = bytes[index]
        if isBasicCode(code) || code == UInt8(ascii: "v") { return index + 1 }
        guard code == UInt8(ascii: "a"), index + 1 < bytes.count else { return nil }
        let element = bytes[index + 1]
        if isBasicCode(element) || element == UInt8(ascii: "v") { return index + 2 }
        guard element == UInt8(ascii: "{"), index + 4 < bytes.count, isBasicCode(bytes[index + 2]),
              isBasicCode(bytes[index + 3]) || bytes[index + 3] == UInt8(ascii: "v"),
              bytes[index + 4] == UInt8(ascii: "}") else { return nil }
        return index + 5
    }

    /// The basic types' codes: `y b n q i u x t d s o g h`.
    private static func isBasicCode(_ code: UInt8) -> Bool {
        switch code {
        case UInt8(ascii: "y"), UInt8(ascii: "b"), UInt8(ascii: "n"), UInt8(ascii: "q"), UInt8(ascii: "i"),
             UInt8(ascii: "u"), UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "s"),
             UInt8(ascii: "o"), UInt8(ascii: "g"), UInt8(ascii: "h"):
            return true
        default:
            return false
        }
    }

    /// Index just past the complete type starting at `start` (the signature must be valid).
    static func endOfCompleteType(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start
        // Arrays prefix their element; skip every `a`, then one element.
        while index < bytes.count, bytes[index] == UInt8(ascii: "a") { index += 1 }
        guard index < bytes.count else { return index }
        let open = bytes[index]
        guard open == UInt8(ascii: "(") || open == UInt8(ascii: "{") else { return index + 1 }
        var depth = 0
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "("), UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: ")"), UInt8(ascii: "}"):
                depth -= 1
                if depth == 0 { return index + 1 }
            default: break
            }
            index += 1
        }
        return index
    }
}

extension DBusSignature {
    public static let byte: DBusSignature = "y"
    public static let bool: DBusSignature = "b"
    public static let int16: DBusSignature = "n"
    public static let uint16: DBusSignature = "q"
    public static let int32: DBusSignature = "i"
    public static let uint32: DBusSignature = "u"
    public static let int64: DBusSignature = "x"
    public static let uint64: DBusSignature = "t"
    public static let double: DBusSignature = "d"
    public static let string: DBusSignature = "s"
    public static let objectPath: DBusSignature = "o"
    public static let signature: DBusSignature = "g"
    public static let unixFD: DBusSignature = "h"
    public static let variant: DBusSignature = "v"
    public static let bytes: DBusSignature = "ay"
    public static let stringArray: DBusSignature = "as"
    public static let objectPathArray: DBusSignature = "ao"
    public static let stringVariantDict: DBusSignature = "a{sv}"
    public static let stringStringDict: DBusSignature = "a{ss}"

    /// The concatenation of several signatures (the signature of a message's arguments).
    public static func concatenating(_ parts: [DBusSignature]) -> DBusSignature {
        var text = ""
        for part in parts { text += part.rawValue }
        return DBusSignature(unchecked: text)
    }
}

extension DBusValue {
    /// This value's single complete type.
    public var signature: DBusSignature {
        switch self {
        case .byte: return .byte
        case .bool: return .bool
        case .int16: return .int16
        case .uint16: return .uint16
        case .int32: return .int32
        case .uint32: return .uint32
        case .int64: return .int64
        case .uint64: return .uint64
        case .double: return .double
        case .string, .secretString: return .string
        case .objectPath: return .objectPath
        case .signature: return .signature
        case .unixFD: return .unixFD
        case .variant: return .variant
        case .bytes: return .bytes
        case .array(let element, _): return DBusSignature(unchecked: "a" + element.rawValue)
        case .dictionary(let key, let value, _): return DBusSignature(unchecked: "a{" + key.rawValue + value.rawValue + "}")
        case .structure(let fields):
            // Appended in place: a signature of up to 15 bytes stays inside the string, where
            // mapping the fields to an array of their texts first allocated on every reply
            // carrying a struct (docs/performance.md, "The D-Bus layer's strings and objects per call").
            var text = "("
            for field in fields { text += field.signature.rawValue }
            text += ")"
            return DBusSignature(unchecked: text)
        }
    }
}

extension DBusValue {
    /// True for the basic (non-container) types, whose one-letter signatures are always valid.
    var isBasic: Bool {
        switch self {
        case .array, .bytes, .dictionary, .structure, .variant: return false
        default: return true
        }
    }
}

extension Array where Element == DBusValue {
    /// The signature of these values taken as message arguments.
    /// Appended in place, as a struct's (two arrays per reply of several values, otherwise).
    public var signature: DBusSignature {
        var text = ""
        for value in self { text += value.signature.rawValue }
        return DBusSignature(unchecked: text)
    }
}
