import KeywellDBus

/// How one argument's D-Bus type is handed to Swift: the common shapes as Swift values (through
/// `DBusValue`'s accessors), every other container as the `DBusValue` itself, whose type the
/// layer has already checked against the declaration (docs/dbus-layer.md, "Interfaces from XML").
struct SwiftType {
    /// The Swift type of the parameter or return value.
    let name: String
    /// The `DBusValue` accessor that reads it (an optional), or nil when the value is passed as it is.
    let accessor: String?
    /// The `DBusValue` case or builder that writes it, or nil when it is a `DBusValue` already.
    let builder: String?

    /// `asValue`: the input signatures a job passes as the `DBusValue` itself (`CodegenJob.valueSignatures`).
    static func of(_ signature: DBusSignature, asValue: Set<String> = []) -> SwiftType {
        if asValue.contains(signature.rawValue) { return SwiftType(name: "DBusValue", accessor: nil, builder: nil) }
        return switch signature.rawValue {
        case "s": SwiftType(name: "String", accessor: "stringValue", builder: "string")
        case "o": SwiftType(name: "String", accessor: "objectPathValue", builder: "objectPath")
        case "g": SwiftType(name: "DBusSignature", accessor: "signatureValue", builder: "signature")
        case "b": SwiftType(name: "Bool", accessor: "boolValue", builder: "bool")
        case "y": SwiftType(name: "UInt8", accessor: "byteValue", builder: "byte")
        case "n": SwiftType(name: "Int16", accessor: "int16Value", builder: "int16")
        case "q": SwiftType(name: "UInt16", accessor: "uint16Value", builder: "uint16")
        case "i": SwiftType(name: "Int32", accessor: "int32Value", builder: "int32")
        case "u": SwiftType(name: "UInt32", accessor: "uint32Value", builder: "uint32")
        case "x": SwiftType(name: "Int64", accessor: "int64Value", builder: "int64")
        case "t": SwiftType(name: "UInt64", accessor: "uint64Value", builder: "uint64")
        case "d": SwiftType(name: "Double", accessor: "doubleValue", builder: "double")
        // A received descriptor is taken (and then closed) by the handler, or closed with the call.
        case "h": SwiftType(name: "Int32", accessor: nil, builder: "unixFD")
        case "v": SwiftType(name: "DBusValue", accessor: "variantValue", builder: "variant")
        case "ay": SwiftType(name: "[UInt8]", accessor: "bytesValue", builder: "bytes")
        case "as": SwiftType(name: "[String]", accessor: "stringArrayValue", builder: "stringArray")
        case "ao": SwiftType(name: "[String]", accessor: "objectPathArrayValue", builder: "objectPathArray")
        case "a{ss}": SwiftType(name: "[String: String]", accessor: "asStringStringDict()", builder: "stringStringDict")
        default: SwiftType(name: "DBusValue", accessor: nil, builder: nil)
        }
    }

    /// A string marked `CodegenJob.secretStringsAnnotation`: its UTF-8 in locked memory.
    static let secretString = SwiftType(name: "SecretBytes", accessor: "secretStringValue", builder: "secretString")

    /// `secret`: the argument is marked `CodegenJob.secretStringsAnnotation` (an `s` becomes
    /// `SecretBytes`; any other type is as it would be).
    static func of(_ signature: DBusSignature, asValue: Set<String> = [], secret: Bool) -> SwiftType {
        secret && signature == "s" ? secretString : of(signature, asValue: asValue)
    }

    /// An input's parameter type: a descriptor comes as the argument to take.
    static func input(_ signature: DBusSignature, asValue: Set<String> = [], secret: Bool = false) -> String {
        signature == "h" ? "DBusDescriptorArgument" : of(signature, asValue: asValue, secret: secret).name
    }

    /// The expression that reads argument `index` of `call` (optional when `isOptional`).
    static func decode(_ signature: DBusSignature, index: Int, asValue: Set<String> = [],
                       secret: Bool = false) -> (expression: String, isOptional: Bool) {
        if signature == "h" { return ("DBusDescriptorArgument(call, argument: \(index))", false) }
        let type = of(signature, asValue: asValue, secret: secret)
        guard let accessor = type.accessor else { return ("arguments[\(index)]", false) }
        return ("arguments[\(index)].\(accessor)", true)
    }

    /// The expression that makes a reply value of `expression`.
    static func encode(_ signature: DBusSignature, _ expression: String, asValue: Set<String> = [], secret: Bool = false) -> String {
        guard let builder = of(signature, asValue: asValue, secret: secret).builder else { return expression }
        return ".\(builder)(\(expression))"
    }
}

/// Swift identifiers made from D-Bus names.
enum SwiftName {
    /// `OpenSession` → `openSession`, `window-id` → `windowId`, `app_id` → `appId`.
    static func lowerCamel(_ name: String) -> String {
        let parts = name.split { !($0.isLetter || $0.isNumber) }.map(String.init)
        guard let first = parts.first else { return "_" }
        var result = first.prefix(1).lowercased() + first.dropFirst()
        for part in parts.dropFirst() { result += part.prefix(1).uppercased() + part.dropFirst() }
        if result.first?.isNumber == true { result = "_" + result }
        return result
    }

    /// `name` usable as a local or a label: keywords in backquotes.
    static func escaped(_ name: String) -> String {
        keywords.contains(name) ? "`\(name)`" : name
    }

    private static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init", "inout",
        "internal", "let", "open", "operator", "private", "protocol", "public", "rethrows", "static", "struct",
        "subscript", "typealias", "var", "break", "case", "continue", "default", "defer", "do", "else",
        "fallthrough", "for", "guard", "if", "in", "repeat", "return", "switch", "where", "while", "as", "Any",
        "catch", "false", "is", "nil", "super", "self", "Self", "throw", "throws", "true", "try",
    ]
}
