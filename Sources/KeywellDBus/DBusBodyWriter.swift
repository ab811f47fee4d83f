import CDBus

/// Writes a message body straight into libdbus's iterators, checked against a declared
/// signature as it goes: a reply of thousands of entries (GetSecrets' `a{o(oayays)}`) needs no
/// `DBusValue` tree built, checked, encoded and released first (docs/performance.md, "GetSecrets
/// of many items").
///
/// Every append is compared with the next type code of the declared signature before libdbus
/// sees it (libdbus aborts the process on a type that does not fit its container); a container
/// must be complete when it closes. Strings are NUL-free and object paths valid, as
/// `MessageEncoder` checks them. No variants: their content would need a signature of its own.
public struct DBusBodyWriter {
    private var iter: DBusMessageIter
    /// The declared signature, shared by every writer of one body.
    private let types: [UInt8]
    /// The contents of this container in `types`: `start..<end`; `position` is the next code.
    private let start: Int
    private let end: Int
    private var position: Int
    /// An array's contents are its element type, written any number of times.
    private let repeats: Bool

    private init(iter: DBusMessageIter, types: [UInt8], start: Int, end: Int, repeats: Bool) {
        self.iter = iter
        self.types = types
        self.start = start
        self.end = end
        self.position = start
        self.repeats = repeats
    }

    /// Writes `body` into `message` (which holds no arguments yet) as values of `signature`.
    static func write(_ signature: DBusSignature, into message: OpaquePointer,
                      _ body: (inout DBusBodyWriter) throws(DBusError) -> Void) throws(DBusError) {
        guard signature.isValid else {
            throw DBusError(name: DBusError.Name.invalidSignature, message: "Invalid argument signature \(signature.rawValue.debugDescription)")
        }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        let types = Array(signature.rawValue.utf8)
        var writer = DBusBodyWriter(iter: iter, types: types, start: 0, end: types.count, repeats: false)
        try body(&writer)
        try writer.requireComplete()
    }

    // MARK: Basic values

    public mutating func appendObjectPath(_ path: String) throws(DBusError) {
        try appendObjectPath(DBusCheckedPath(path))
    }

    /// A path checked once already: one reply may carry the same path a thousand times (a
    /// session's, in every secret of GetSecrets' reply).
    public mutating func appendObjectPath(_ path: DBusCheckedPath) throws(DBusError) {
        try expect(UInt8(ascii: "o"))
        try append(TypeCode.objectPath, path.rawValue)
    }

    public mutating func appendString(_ string: String) throws(DBusError) {
        try expect(UInt8(ascii: "s"))
        try NameValidation.string(string)
        try append(TypeCode.string, string)
    }

    /// An `ay`, in one copy from where the bytes lie.
    public mutating func appendBytes(_ bytes: UnsafeRawBufferPointer) throws(DBusError) {
        try expect(UInt8(ascii: "a"))
        guard position + 1 < end, types[position + 1] == UInt8(ascii: "y") else { throw mismatch("ay") }
        try MessageEncoder.appendByteArray(&iter, bytes)
        position += 2
    }

    public mutating func appendBytes(_ bytes: [UInt8]) throws(DBusError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(DBusError) in try appendBytes(raw) } }.get()
    }

    // MARK: Containers

    /// An array (`a…`, dictionaries included): `body` writes its elements, each of its element type.
    public mutating func appendArray(_ body: (inout DBusBodyWriter) throws(DBusError) -> Void) throws(DBusError) {
        try expect(UInt8(ascii: "a"))
        let elementEnd = DBusSignature.endOfCompleteType(types, from: position + 1)
        let element = String(decoding: types[(position + 1)..<elementEnd], as: UTF8.self)
        try container(TypeCode.array, element, contents: (position + 1)..<elementEnd, repeats: true, body)
        position = elementEnd
    }

    /// A struct: `body` writes every field, in order.
    public mutating func appendStructure(_ body: (inout DBusBodyWriter) throws(DBusError) -> Void) throws(DBusError) {
        try expect(UInt8(ascii: "("))
        let close = DBusSignature.endOfCompleteType(types, from: position) - 1
        try container(TypeCode.structure, nil, contents: (position + 1)..<close, repeats: false, body)
        position = close + 1
    }

    /// One entry of a dictionary: `body` writes its key, then its value.
    public mutating func appendDictEntry(_ body: (inout DBusBodyWriter) throws(DBusError) -> Void) throws(DBusError) {
        try expect(UInt8(ascii: "{"))
        let close = DBusSignature.endOfCompleteType(types, from: position) - 1
        try container(TypeCode.dictEntry, nil, contents: (position + 1)..<close, repeats: false, body)
        position = close + 1
    }

    // MARK: Checks

    /// The next code must be `code` (an array's element starts over once complete).
    private mutating func expect(_ code: UInt8) throws(DBusError) {
        if repeats, position == end { position = start }
        guard position < end, types[position] == code else { throw mismatch(String(UnicodeScalar(code))) }
    }

    private func requireComplete() throws(DBusError) {
        guard position == end || (repeats && position == start) else {
            throw .invalidArgs("Incomplete value: \(String(decoding: types[position..<end], as: UTF8.self)) still to write")
        }
    }

    private func mismatch(_ written: String) -> DBusError {
        let expected = position < end ? String(decoding: types[position..<DBusSignature.endOfCompleteType(types, from: position)], as: UTF8.self) : "nothing"
        return .invalidArgs("Wrote \(written) where the signature \(String(decoding: types, as: UTF8.self)) has \(expected)")
    }

    // MARK: libdbus

    private mutating func append(_ type: Int32, _ string: String) throws(DBusError) {
        try MessageEncoder.appendString(&iter, type, string)
        position += 1
    }

    /// Opens a container, lets `body` fill it, checks it is complete and closes it; on failure
    /// abandons it, so the message stays consistent (and is then dropped).
    private mutating func container(
        _ type: Int32, _ contained: String?, contents: Range<Int>, repeats: Bool,
        _ body: (inout DBusBodyWriter) throws(DBusError) -> Void
    ) throws(DBusError) {
        var sub = DBusBodyWriter(iter: DBusMessageIter(), types: types, start: contents.lowerBound, end: contents.upperBound, repeats: repeats)
        let opened: dbus_bool_t
        if let contained {
            opened = contained.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub.iter) }
        } else {
            opened = dbus_message_iter_open_container(&iter, type, nil, &sub.iter)
        }
        guard opened != 0 else { throw .noMemory() }
        do {
            try body(&sub)
            try sub.requireComplete()
        } catch {
            dbus_message_iter_abandon_container_if_open(&iter, &sub.iter)
            throw error
        }
        guard dbus_message_iter_close_container(&iter, &sub.iter) != 0 else { throw .noMemory() }
    }
}

/// An object path, checked when made (as `DBusBodyWriter.appendObjectPath(_: String)` checks
/// each path it is given); libdbus still checks it again as it writes it.
public struct DBusCheckedPath: Sendable, Hashable {
    public let rawValue: String

    public init(_ path: String) throws(DBusError) {
        try NameValidation.objectPath(path)
        rawValue = path
    }

    /// A path libdbus validated already (it checks every path of a message it receives).
    fileprivate init(validatedByLibdbus path: String) {
        rawValue = path
    }
}

extension DBusMethodCall {
    /// The paths of the call's argument `index`, an `ao`, as checked paths: they came in a
    /// message libdbus received, and libdbus checks every path of such a message before any of
    /// it is read. For a handler that writes the paths it was given back into its reply (a
    /// thousand of them in GetSecrets'). Nil when that argument is not an `ao`.
    public func receivedObjectPaths(at index: Int) -> [DBusCheckedPath]? {
        guard index < arguments.count, case .array(let element, let paths) = arguments[index], element == .objectPath else { return nil }
        var checked: [DBusCheckedPath] = []
        checked.reserveCapacity(paths.count)
        for path in paths {
            guard case .objectPath(let raw) = path else { return nil }
            checked.append(DBusCheckedPath(validatedByLibdbus: raw))
        }
        return checked
    }
}

/// A reply value written by its handler (`DBusBodyWriter`) when the reply is built, rather than
/// returned as a `DBusValue`. `whenDone` runs once, written or not (the handler wipes there any
/// plaintext `write` captured).
public struct DBusWrittenValue {
    let write: (inout DBusBodyWriter) throws(DBusError) -> Void
    let whenDone: () -> Void

    public init(write: @escaping (inout DBusBodyWriter) throws(DBusError) -> Void, whenDone: @escaping () -> Void = {}) {
        self.write = write
        self.whenDone = whenDone
    }
}

/// What a dispatch returns for a reply: values, or one value its handler writes
/// (a method marked `org.keywell.WrittenReply` in its XML), with the method's declared signature.
public enum DBusReplyBody {
    case values([DBusValue])
    case written(DBusWrittenValue, signature: DBusSignature)
}

extension DBusReplyBody: ExpressibleByArrayLiteral {
    public init(arrayLiteral values: DBusValue...) { self = .values(values) }
}
