import CDBus
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// Reads a message's arguments into `[DBusValue]` with dbus_message_iter_*.
///
/// libdbus validates every message it receives (UTF-8, signatures, nesting ≤ 64), so what
/// remains is to stay linear and bounded: fixed-size arrays are copied in one go, other arrays
/// are walked once, recursion stops with an error past the wire format's depth limit, and
/// decoding stops with LimitsExceeded past `maximumValues` values (a byte array counts as one),
/// which bounds the memory a small message of many tiny values would take once decoded.
enum MessageDecoder {
    /// `secretStrings`: the arguments (by index) whose `s` decodes to `.secretString`, read from
    /// libdbus's buffer straight into locked memory (`DBusMethod.secretStrings`).
    static func decodeArguments(of message: OpaquePointer, maximumValues: Int = .max,
                                secretStrings: [Int] = []) throws(DBusError) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }  // no arguments
        var budget = Budget(maximum: maximumValues)
        guard !secretStrings.isEmpty else { return try decodeSequence(&iter, depth: 0, &budget) }
        var values: [DBusValue] = []
        repeat {
            let type = dbus_message_iter_get_arg_type(&iter)
            if type == TypeCode.string, secretStrings.contains(values.count) {
                try budget.spend(1)
                values.append(.secretString(secretString(&iter)))
            } else {
                values.append(try decodeValue(&iter, type: type, depth: 0, &budget))
            }
        } while dbus_message_iter_next(&iter) != 0
        return values
    }

    /// Values left to decode.
    private struct Budget {
        let maximum: Int
        private var left: Int

        init(maximum: Int) {
            self.maximum = maximum
            left = maximum
        }

        mutating func spend(_ count: Int) throws(DBusError) {
            left -= count
            guard left >= 0 else {
                throw DBusError(name: DBusError.Name.limitsExceeded,
                                message: "The arguments hold more than \(maximum) values, the most one call may have")
            }
        }
    }

    /// Decodes every value from the iterator's position to the end of its container. Each
    /// value's type is read from libdbus once, here, and handed down (a reply of a thousand
    /// secrets asked for it some ten thousand times more otherwise). `expected` sizes the array
    /// up front (a struct's fields), sparing its regrowth.
    private static func decodeSequence(_ iter: inout DBusMessageIter, depth: Int, _ budget: inout Budget,
                                       expected: Int = 0) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        var type = dbus_message_iter_get_arg_type(&iter)
        guard type != TypeCode.invalid else { return values }
        values.reserveCapacity(expected)
        repeat {
            values.append(try decodeValue(&iter, type: type, depth: depth, &budget))
            dbus_message_iter_next(&iter)
            type = dbus_message_iter_get_arg_type(&iter)
        } while type != TypeCode.invalid
        return values
    }

    private static func decodeValue(_ iter: inout DBusMessageIter, depth: Int, _ budget: inout Budget) throws(DBusError) -> DBusValue {
        try decodeValue(&iter, type: dbus_message_iter_get_arg_type(&iter), depth: depth, &budget)
    }

    /// The value at `iter`, whose type code (`dbus_message_iter_get_arg_type`) is `type`.
    private static func decodeValue(_ iter: inout DBusMessageIter, type: Int32, depth: Int, _ budget: inout Budget) throws(DBusError) -> DBusValue {
        try budget.spend(1)
        switch type {
        case TypeCode.byte: return .byte(basic(&iter, UInt8.self))
        case TypeCode.bool: return .bool(basic(&iter, dbus_bool_t.self) != 0)
        case TypeCode.int16: return .int16(basic(&iter, Int16.self))
        case TypeCode.uint16: return .uint16(basic(&iter, UInt16.self))
        case TypeCode.int32: return .int32(basic(&iter, Int32.self))
        case TypeCode.uint32: return .uint32(basic(&iter, UInt32.self))
        case TypeCode.int64: return .int64(basic(&iter, Int64.self))
        case TypeCode.uint64: return .uint64(basic(&iter, UInt64.self))
        case TypeCode.double: return .double(basic(&iter, Double.self))
        case TypeCode.unixFD: return .unixFD(basic(&iter, Int32.self))
        case TypeCode.string: return .string(string(&iter))
        case TypeCode.objectPath: return .objectPath(string(&iter))
        case TypeCode.signature: return .signature(DBusSignature(unchecked: string(&iter)))
        case TypeCode.array, TypeCode.structure, TypeCode.variant, TypeCode.dictEntry:
            guard depth < maximumContainerDepth else {
                throw DBusError(name: DBusError.Name.limitsExceeded, message: "Message nested deeper than \(maximumContainerDepth) containers")
            }
            return try decodeContainer(&iter, type: type, depth: depth + 1, &budget)
        default:
            throw .invalidArgs("Unknown D-Bus type code \(type)")
        }
    }

    private static func decodeContainer(_ iter: inout DBusMessageIter, type: Int32, depth: Int, _ budget: inout Budget) throws(DBusError) -> DBusValue {
        var sub = DBusMessageIter()
        switch type {
        case TypeCode.variant:
            dbus_message_iter_recurse(&iter, &sub)
            let inner = dbus_message_iter_get_arg_type(&sub)
            guard inner != TypeCode.invalid else { throw .invalidArgs("Empty variant") }
            return .variant(try decodeValue(&sub, type: inner, depth: depth, &budget))
        case TypeCode.structure:
            dbus_message_iter_recurse(&iter, &sub)
            // Most structs are small (a secret's has four fields): one allocation, no regrowth.
            return .structure(try decodeSequence(&sub, depth: depth, &budget, expected: 4))
        case TypeCode.dictEntry:
            throw .invalidArgs("Dictionary entry outside an array")
        default:
            return try decodeArray(&iter, depth: depth, &budget)
        }
    }

    private static func decodeArray(_ iter: inout DBusMessageIter, depth: Int, _ budget: inout Budget) throws(DBusError) -> DBusValue {
        var sub = DBusMessageIter()
        // A fixed-size element type's array, copied in one go.
        // Each element becomes a value of its own (unlike a byte array's), so each counts.
        func fixed<T>(_ element: DBusSignature, _ type: T.Type, _ wrap: (T) -> DBusValue) throws(DBusError) -> DBusValue {
            dbus_message_iter_recurse(&iter, &sub)
            try budget.spend(Int(keywell_iter_array_byte_length(&sub)) / MemoryLayout<T>.size)
            return .array(elementSignature: element, fixedArray(&sub, type).map(wrap))
        }
        // Arrays of one-letter types need no signature from libdbus (an allocation and two
        // string copies for every `ay` of a reply with a thousand secrets).
        switch dbus_message_iter_get_element_type(&iter) {
        case TypeCode.byte:
            dbus_message_iter_recurse(&iter, &sub)
            return .bytes(fixedArray(&sub, UInt8.self))
        case TypeCode.bool: return try fixed(.bool, dbus_bool_t.self) { .bool($0 != 0) }
        case TypeCode.int16: return try fixed(.int16, Int16.self, DBusValue.int16)
        case TypeCode.uint16: return try fixed(.uint16, UInt16.self, DBusValue.uint16)
        case TypeCode.int32: return try fixed(.int32, Int32.self, DBusValue.int32)
        case TypeCode.uint32: return try fixed(.uint32, UInt32.self, DBusValue.uint32)
        case TypeCode.int64: return try fixed(.int64, Int64.self, DBusValue.int64)
        case TypeCode.uint64: return try fixed(.uint64, UInt64.self, DBusValue.uint64)
        case TypeCode.double: return try fixed(.double, Double.self, DBusValue.double)
        case TypeCode.string:
            return .array(elementSignature: .string, try decodeElements(&iter, depth: depth, &budget))
        case TypeCode.objectPath:
            return .array(elementSignature: .objectPath, try decodeElements(&iter, depth: depth, &budget))
        case TypeCode.dictEntry:
            // `a{ss}`, `a{sv}`: the two types read off the first entry, where asking libdbus for the
            // array's signature allocated a copy of it (a search's attributes, on every call).
            if let (key, value) = oneLetterEntryTypes(&iter) {
                dbus_message_iter_recurse(&iter, &sub)
                return try decodeEntries(&sub, key, value, depth: depth, &budget)
            }
        default:
            break
        }
        let arraySignature = currentSignature(&iter)
        guard arraySignature.hasPrefix("a") else { throw .invalidArgs("Array with signature \(arraySignature)") }
        let element = DBusSignature(unchecked: String(arraySignature.dropFirst()))
        dbus_message_iter_recurse(&iter, &sub)

        if element.rawValue.hasPrefix("{") {
            // `{kv}`: the key is one basic type code, the value is the rest.
            let inner = element.rawValue.dropFirst().dropLast()
            let keySignature = DBusSignature(unchecked: String(inner.prefix(1)))
            let valueSignature = DBusSignature(unchecked: String(inner.dropFirst()))
            return try decodeEntries(&sub, keySignature, valueSignature, depth: depth, &budget)
        }

        return .array(elementSignature: element, try decodeSequence(&sub, depth: depth, &budget))
    }

    /// The entries of a dictionary, `sub` inside its array.
    private static func decodeEntries(_ sub: inout DBusMessageIter, _ keySignature: DBusSignature, _ valueSignature: DBusSignature,
                                      depth: Int, _ budget: inout Budget) throws(DBusError) -> DBusValue {
        var entries: [DBusDictEntry] = []
        while dbus_message_iter_get_arg_type(&sub) == TypeCode.dictEntry {
            var pair = DBusMessageIter()
            dbus_message_iter_recurse(&sub, &pair)
            let key = try decodeValue(&pair, depth: depth + 1, &budget)
            guard dbus_message_iter_next(&pair) != 0 else { throw .invalidArgs("Dictionary entry without a value") }
            let value = try decodeValue(&pair, depth: depth + 1, &budget)
            entries.append(DBusDictEntry(key: key, value: value))
            dbus_message_iter_next(&sub)
        }
        return .dictionary(keySignature: keySignature, valueSignature: valueSignature, entries)
    }

    /// The key and value types of the dictionary at `iter` when both are one letter (a basic
    /// type or a variant), read off its first entry; nil when it has none or its value type is a
    /// container (its signature is then asked of libdbus). libdbus checked every entry against the
    /// array's signature, so the first entry's types are every entry's.
    private static func oneLetterEntryTypes(_ iter: inout DBusMessageIter) -> (DBusSignature, DBusSignature)? {
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        guard dbus_message_iter_get_arg_type(&sub) == TypeCode.dictEntry else { return nil }
        var pair = DBusMessageIter()
        dbus_message_iter_recurse(&sub, &pair)
        let key = dbus_message_iter_get_arg_type(&pair)
        guard dbus_message_iter_next(&pair) != 0 else { return nil }
        let value = dbus_message_iter_get_arg_type(&pair)
        guard let keySignature = oneLetter(key), let valueSignature = oneLetter(value) else { return nil }
        return (keySignature, valueSignature)
    }

    /// The signature of a type whose type code is its signature (a basic type, a variant).
    private static func oneLetter(_ type: Int32) -> DBusSignature? {
        switch type {
        case TypeCode.array, TypeCode.structure, TypeCode.dictEntry, TypeCode.invalid: return nil
        default:
            guard let scalar = Unicode.Scalar(UInt32(type)), scalar.isASCII else { return nil }
            return DBusSignature(unchecked: String(Character(scalar)))
        }
    }

    /// The elements of the array at `iter`, one by one.
    private static func decodeElements(_ iter: inout DBusMessageIter, depth: Int, _ budget: inout Budget) throws(DBusError) -> [DBusValue] {
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        return try decodeSequence(&sub, depth: depth, &budget)
    }

    private static func basic<T: FixedWidthInteger>(_ iter: inout DBusMessageIter, _ type: T.Type) -> T {
        var value: T = 0
        dbus_message_iter_get_basic(&iter, &value)
        return value
    }

    private static func basic(_ iter: inout DBusMessageIter, _ type: Double.Type) -> Double {
        var value: Double = 0
        dbus_message_iter_get_basic(&iter, &value)
        return value
    }

    private static func string(_ iter: inout DBusMessageIter) -> String {
        var cString: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &cString)
        return cString.map { String(cString: $0) } ?? ""
    }

    /// The string at `iter`, copied from libdbus's buffer into locked memory (its `strlen`
    /// bytes: libdbus checked that a string holds no NUL and is UTF-8).
    private static func secretString(_ iter: inout DBusMessageIter) -> SecretBytes {
        var cString: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &cString)
        guard let cString else { return SecretBytes(transientCount: 0) }
        return SecretBytes(transientCopying: UnsafeRawBufferPointer(start: cString, count: strlen(cString)))
    }

    /// The single complete type at the iterator (libdbus allocates it; we free it).
    private static func currentSignature(_ iter: inout DBusMessageIter) -> String {
        guard let raw = dbus_message_iter_get_signature(&iter) else { return "" }
        defer { dbus_free(raw) }
        return String(cString: raw)
    }

    /// One copy of a fixed-size array's elements straight from the message buffer.
    private static func fixedArray<T>(_ sub: inout DBusMessageIter, _ type: T.Type) -> [T] {
        guard dbus_message_iter_get_arg_type(&sub) != TypeCode.invalid else { return [] }
        var base: UnsafeMutableRawPointer? = nil
        var count: Int32 = 0
        withUnsafeMutablePointer(to: &base) { pointer in
            dbus_message_iter_get_fixed_array(&sub, pointer, &count)
        }
        guard let base, count > 0 else { return [] }
        let typed = base.assumingMemoryBound(to: T.self)
        return Array(UnsafeBufferPointer(start: typed, count: Int(count)))
    }
}
