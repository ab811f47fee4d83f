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
        if raw.containsNUL { return false }
        return raw.withCString { dbus_signature_validate($0, nil) } != 0
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
        case .string: return .string
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
