import KeywellSystem

/// One D-Bus value, of any type the wire format has.
///
/// Containers carry their element types so that empty arrays and dictionaries keep their
/// signature. `ay` has its own case (`bytes`) because secrets and blobs travel as `ay` and a
/// byte-per-enum representation would be 30× larger: decoding always yields `.bytes` for `ay`,
/// encoding accepts both `.bytes` and `.array(elementSignature: "y", …)`.
public enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    /// An `s` that carries a secret (a KWallet password): its UTF-8 in locked memory that is
    /// wiped when the last reference goes (`SecretBytes`), never a Swift `String`. Only the
    /// strings of methods marked `org.keywell.SecretStrings` decode to it; on the wire it is an
    /// `s` like any other (docs/dbus-layer.md, "Secrets in messages").
    case secretString(SecretBytes)
    case objectPath(String)
    case signature(DBusSignature)
    /// A file descriptor. Received descriptors are owned by the receiver (libdbus dups them):
    /// a method call's are closed when the call ends unless its handler takes them
    /// (`DBusMethodCall.takeFileDescriptor`); sent ones are duplicated by libdbus and stay
    /// owned by the sender.
    case unixFD(Int32)

    /// `a<element>` for any element type except dict entries (use `dictionary`).
    case array(elementSignature: DBusSignature, [DBusValue])
    /// `ay`.
    case bytes([UInt8])
    /// `a{<key><value>}`; entries keep their order. The key type must be basic.
    case dictionary(keySignature: DBusSignature, valueSignature: DBusSignature, [DBusDictEntry])
    /// `(…)`; at least one field.
    case structure([DBusValue])
    /// `v`.
    indirect case variant(DBusValue)
}

/// One entry of a D-Bus dictionary.
public struct DBusDictEntry: Sendable, Hashable {
    public var key: DBusValue
    public var value: DBusValue

    public init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}

extension DBusValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByFloatLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension DBusValue: CustomStringConvertible {
    /// A compact GVariant-like text form, for logs and test failures.
    public var description: String {
        switch self {
        case .byte(let v): return "byte \(v)"
        case .bool(let v): return "\(v)"
        case .int16(let v): return "int16 \(v)"
        case .uint16(let v): return "uint16 \(v)"
        case .int32(let v): return "\(v)"
        case .uint32(let v): return "uint32 \(v)"
        case .int64(let v): return "int64 \(v)"
        case .uint64(let v): return "uint64 \(v)"
        case .double(let v): return "\(v)"
        case .string(let v): return v.debugDescription
        case .secretString(let v): return "secret string[\(v.count)]"
        case .objectPath(let v): return "objectpath \(v.debugDescription)"
        case .signature(let v): return "signature \(v.rawValue.debugDescription)"
        case .unixFD(let v): return "handle \(v)"
        case .bytes(let v): return "bytes[\(v.count)]"
        case .array(let signature, let elements):
            if elements.count > 16 { return "@a\(signature.rawValue) [\(elements.count) elements]" }
            return "@a\(signature.rawValue) [" + elements.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let key, let value, let entries):
            if entries.count > 16 { return "@a{\(key.rawValue)\(value.rawValue)} {\(entries.count) entries}" }
            return "{" + entries.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .structure(let fields): return "(" + fields.map(\.description).joined(separator: ", ") + ")"
        case .variant(let inner): return "<\(inner)>"
        }
    }
}
