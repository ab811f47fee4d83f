import CDBus
import KeywellSystem

/// Writes `[DBusValue]` into a message with dbus_message_iter_append_*.
///
/// Everything libdbus would abort on is checked first: signatures (length, nesting), that every
/// element matches its container's declared type, NUL-free strings, valid object paths.
enum MessageEncoder {
    /// The largest `ay` (and byte size of any array) the wire format allows.
    static let maximumArrayBytes = 64 * 1024 * 1024

    /// Returns the signature written (the body's whole signature).
    @discardableResult
    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) -> DBusSignature {
        for value in values where !isBoundedByType(value) && !isWithinDepthLimit(value, depth: 0) {
            throw DBusError(name: DBusError.Name.limitsExceeded, message: "Value nested deeper than \(maximumContainerDepth) containers")
        }
        // One value (most replies) is its own signature: no joining of the parts.
        let signature = values.count == 1 ? values[0].signature : values.signature
        guard signature.isValid else {
            throw DBusError(name: DBusError.Name.invalidSignature, message: "Invalid argument signature \(signature.rawValue.debugDescription)")
        }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in values {
            try append(value, to: &iter)
        }
        return signature
    }

    /// An array or dictionary whose element type holds no variant and is shorter than the limit
    /// cannot nest deeper than that type: every element is checked against it before it is
    /// written (`requireType`), and that check only descends as far as the type does. Such a
    /// value (GetSecrets' `a{o(oayays)}` of a thousand entries) needs no walk of its own.
    private static func isBoundedByType(_ value: DBusValue) -> Bool {
        let element: String
        switch value {
        case .array(let signature, _): element = signature.rawValue
        case .dictionary(let key, let value, _): element = key.rawValue + value.rawValue
        case .bytes: return true
        default: return false
        }
        let bytes = element.utf8
        return bytes.count < maximumContainerDepth - 2 && !bytes.contains(UInt8(ascii: "v"))
    }

    /// Bounded recursion: stops descending once the limit is passed, so even a hostile,
    /// absurdly deep value costs at most `maximumContainerDepth` stack frames.
    private static func isWithinDepthLimit(_ value: DBusValue, depth: Int) -> Bool {
        switch value {
        case .array(_, let elements):
            guard depth < maximumContainerDepth else { return false }
            return elements.allSatisfy { isWithinDepthLimit($0, depth: depth + 1) }
        case .dictionary(_, _, let entries):
            // The array and the dict entry are two levels.
            guard depth + 1 < maximumContainerDepth else { return false }
            return entries.allSatisfy { isWithinDepthLimit($0.key, depth: depth + 2) && isWithinDepthLimit($0.value, depth: depth + 2) }
        case .structure(let fields):
            guard depth < maximumContainerDepth else { return false }
            return fields.allSatisfy { isWithinDepthLimit($0, depth: depth + 1) }
        case .variant(let inner):
            guard depth < maximumContainerDepth else { return false }
            return isWithinDepthLimit(inner, depth: depth + 1)
        case .bytes:
            return depth < maximumContainerDepth
        default:
            return true
        }
    }

    private static func append(_ value: DBusValue, to iter: inout DBusMessageIter) throws(DBusError) {
        switch value {
        case .byte(var v): try appendBasic(&iter, TypeCode.byte, &v)
        case .bool(let b):
            var v: dbus_bool_t = b ? 1 : 0
            try appendBasic(&iter, TypeCode.bool, &v)
        case .int16(var v): try appendBasic(&iter, TypeCode.int16, &v)
        case .uint16(var v): try appendBasic(&iter, TypeCode.uint16, &v)
        case .int32(var v): try appendBasic(&iter, TypeCode.int32, &v)
        case .uint32(var v): try appendBasic(&iter, TypeCode.uint32, &v)
        case .int64(var v): try appendBasic(&iter, TypeCode.int64, &v)
        case .uint64(var v): try appendBasic(&iter, TypeCode.uint64, &v)
        case .double(var v): try appendBasic(&iter, TypeCode.double, &v)
        case .string(let s):
            try NameValidation.string(s)
            try appendString(&iter, TypeCode.string, s)
        case .secretString(let secret):
            try appendSecretString(&iter, secret)
        case .objectPath(let path):
            try NameValidation.objectPath(path)
            try appendString(&iter, TypeCode.objectPath, path)
        case .signature(let signature):
            guard signature.isValid else { throw DBusError(name: DBusError.Name.invalidSignature, message: "Invalid signature value \(signature.rawValue.debugDescription)") }
            try appendString(&iter, TypeCode.signature, signature.rawValue)
        case .unixFD(var fd):
            guard fd >= 0 else { throw .invalidArgs("Invalid file descriptor \(fd)") }
            try appendBasic(&iter, TypeCode.unixFD, &fd)
        case .bytes(let bytes):
            // No `Result` here: its type, made at run time, costs a one-call CLI a scan of every
            // conformance (docs/performance.md, "The command line").
            var failure: DBusError?
            bytes.withUnsafeBytes { raw in
                do throws(DBusError) { try appendByteArray(&iter, raw) } catch { failure = error }
            }
            if let failure { throw failure }
        case .array(let element, let elements):
            // Exactly one complete type, and not a bare dict entry (libdbus refuses "{…}" alone).
            guard element.isSingleCompleteType else {
                throw DBusError(name: DBusError.Name.invalidSignature, message: "Invalid array element type \(element.rawValue.debugDescription)")
            }
            try appendArray(&iter, element, elements)
        case .dictionary(let keySignature, let valueSignature, let entries):
            // Its type is part of the enclosing signature, which was validated already.
            let entrySignature = "{" + keySignature.rawValue + valueSignature.rawValue + "}"
            try withContainer(&iter, TypeCode.array, entrySignature) { (sub) throws(DBusError) in
                for entry in entries {
                    try requireType(entry.key, keySignature)
                    try requireType(entry.value, valueSignature)
                    try withContainer(&sub, TypeCode.dictEntry, nil) { (pair) throws(DBusError) in
                        try append(entry.key, to: &pair)
                        try append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw .invalidArgs("A D-Bus struct needs at least one field") }
            try withContainer(&iter, TypeCode.structure, nil) { (sub) throws(DBusError) in
                for field in fields { try append(field, to: &sub) }
            }
        case .variant(let inner):
            let innerSignature = inner.signature
            // A variant starts a new signature: validate it, unless it is a basic type (always valid).
            guard inner.isBasic || innerSignature.isSingleCompleteType else {
                throw DBusError(name: DBusError.Name.invalidSignature, message: "Invalid variant content type \(innerSignature.rawValue.debugDescription)")
            }
            try withContainer(&iter, TypeCode.variant, innerSignature.rawValue) { (sub) throws(DBusError) in
                try append(inner, to: &sub)
            }
        }
    }

    private static func appendArray(_ iter: inout DBusMessageIter, _ element: DBusSignature, _ elements: [DBusValue]) throws(DBusError) {
        for value in elements { try requireType(value, element) }
        try withContainer(&iter, TypeCode.array, element.rawValue) { (sub) throws(DBusError) in
            // Fixed-size elements go in one copy; the rest one by one (still linear).
            switch element.rawValue {
            case "y": try appendFixedArray(&sub, TypeCode.byte, elements.map { $0.byteValue! })
            case "b": try appendFixedArray(&sub, TypeCode.bool, elements.map { $0.boolValue! ? dbus_bool_t(1) : 0 })
            case "n": try appendFixedArray(&sub, TypeCode.int16, elements.map { $0.int16Value! })
            case "q": try appendFixedArray(&sub, TypeCode.uint16, elements.map { $0.uint16Value! })
            case "i": try appendFixedArray(&sub, TypeCode.int32, elements.map { $0.int32Value! })
            case "u": try appendFixedArray(&sub, TypeCode.uint32, elements.map { $0.uint32Value! })
            case "x": try appendFixedArray(&sub, TypeCode.int64, elements.map { $0.int64Value! })
            case "t": try appendFixedArray(&sub, TypeCode.uint64, elements.map { $0.uint64Value! })
            case "d": try appendFixedArray(&sub, TypeCode.double, elements.map { $0.doubleValue! })
            default:
                for value in elements { try append(value, to: &sub) }
            }
        }
    }

    /// An element must have exactly its container's declared type; libdbus would otherwise
    /// write a corrupt message (or abort).
    private static func requireType(_ value: DBusValue, _ expected: DBusSignature) throws(DBusError) {
        guard value.hasType(expected) else {
            throw .invalidArgs("Element of type \(value.signature.rawValue) in a container of \(expected.rawValue)")
        }
    }

    private static func tooLarge(_ count: Int) -> DBusError {
        DBusError(name: DBusError.Name.limitsExceeded, message: "Array of \(count) bytes exceeds the D-Bus limit of \(maximumArrayBytes)")
    }

    private static func appendBasic<T>(_ iter: inout DBusMessageIter, _ type: Int32, _ value: inout T) throws(DBusError) {
        let ok = withUnsafeMutablePointer(to: &value) { dbus_message_iter_append_basic(&iter, type, $0) }
        guard ok != 0 else { throw .noMemory() }
    }

    /// An `ay` in one container, copied once from where the bytes lie (also `DBusBodyWriter`'s).
    static func appendByteArray(_ iter: inout DBusMessageIter, _ bytes: UnsafeRawBufferPointer) throws(DBusError) {
        guard bytes.count <= maximumArrayBytes else { throw tooLarge(bytes.count) }
        try withContainer(&iter, TypeCode.array, "y") { (sub) throws(DBusError) in
            var base: UnsafeRawPointer? = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 8)
            guard dbus_message_iter_append_fixed_array(&sub, TypeCode.byte, &base, Int32(bytes.count)) != 0 else { throw .noMemory() }
        }
    }

    /// A string, object path or signature (also `DBusBodyWriter`'s).
    static func appendString(_ iter: inout DBusMessageIter, _ type: Int32, _ string: String) throws(DBusError) {
        let ok = string.withCString { cString in
            var pointer: UnsafePointer<CChar>? = cString
            return dbus_message_iter_append_basic(&iter, type, &pointer)
        }
        guard ok != 0 else { throw .noMemory() }
    }

    /// A secret string (`DBusValue.secretString`, also `DBusBodyWriter`'s): libdbus takes a
    /// NUL-terminated C string, made here in locked memory that is wiped once libdbus has copied
    /// it, never in a Swift `String`. Checked as libdbus would (it refuses invalid UTF-8, and a
    /// NUL would cut the string short) before libdbus sees it.
    static func appendSecretString(_ iter: inout DBusMessageIter, _ secret: SecretBytes) throws(DBusError) {
        let terminated = SecretBytes(transientCount: secret.count + 1)
        let valid = secret.withUnsafeBytes { source in
            terminated.withUnsafeMutableBytes { target in
                if let base = source.baseAddress, source.count > 0 { target.baseAddress!.copyMemory(from: base, byteCount: source.count) }
            }
            return !source.contains(0) && SecretText.isValidUTF8(source)
        }
        guard valid else { throw .invalidArgs("A D-Bus string must be UTF-8 without NUL characters") }
        let ok = terminated.withUnsafeBytes { bytes in
            var pointer: UnsafePointer<CChar>? = bytes.baseAddress!.assumingMemoryBound(to: CChar.self)
            return dbus_message_iter_append_basic(&iter, TypeCode.string, &pointer)
        }
        guard ok != 0 else { throw .noMemory() }
    }

    private static func appendFixedArray<T>(_ iter: inout DBusMessageIter, _ type: Int32, _ values: [T]) throws(DBusError) {
        guard values.count * MemoryLayout<T>.stride <= maximumArrayBytes else { throw tooLarge(values.count * MemoryLayout<T>.stride) }
        let ok = values.withUnsafeBufferPointer { buffer in
            var base: UnsafeRawPointer? = buffer.baseAddress.map(UnsafeRawPointer.init) ?? UnsafeRawPointer(bitPattern: 8)
            return dbus_message_iter_append_fixed_array(&iter, type, &base, Int32(values.count))
        }
        guard ok != 0 else { throw .noMemory() }
    }

    /// Opens a container, runs `body`, closes it; on failure abandons it so the message stays consistent.
    private static func withContainer(
        _ iter: inout DBusMessageIter, _ type: Int32, _ contained: String?,
        _ body: (inout DBusMessageIter) throws(DBusError) -> Void
    ) throws(DBusError) {
        var sub = DBusMessageIter()
        let opened: dbus_bool_t
        if let contained {
            opened = contained.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub) }
        } else {
            opened = dbus_message_iter_open_container(&iter, type, nil, &sub)
        }
        guard opened != 0 else { throw .noMemory() }
        do {
            try body(&sub)
        } catch {
            dbus_message_iter_abandon_container_if_open(&iter, &sub)
            throw error
        }
        guard dbus_message_iter_close_container(&iter, &sub) != 0 else { throw .noMemory() }
    }
}
