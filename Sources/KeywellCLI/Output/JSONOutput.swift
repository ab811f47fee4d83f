import KeywellProtocol
import KeywellSystem

/// A small JSON writer with fields in the order given, so `--json` output reads the same every
/// time (Foundation's encoder would sort or shuffle keys).
enum JSONValue {
    case string(String)
    case number(Int64)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([(String, JSONValue)])

    /// Text as a JSON string if it is UTF-8, else `{"hex": "…"}` (documented in `--help`).
    static func bytes<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> JSONValue {
        var copy = Array(bytes)
        defer { copy.withUnsafeMutableBytes { SecretMemory.wipe($0) } }
        if let text = String(validating: copy, as: UTF8.self) { return .string(text) }
        return .object([("hex", .string(LowercaseHex.string(copy)))])
    }

    static func optional(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }
}

enum JSONOutput {
    static func write(_ value: JSONValue, to stream: OutputStream) {
        var text = ""
        render(value, indent: 0, into: &text)
        text += "\n"
        stream.write(text)
    }

    static func render(_ value: JSONValue, indent: Int, into text: inout String) {
        let pad = String(repeating: "  ", count: indent + 1)
        let closingPad = String(repeating: "  ", count: indent)
        switch value {
        case .string(let string): text += JSONString.quoted(string, style: .output)
        case .number(let number): text += String(number)
        case .bool(let flag): text += flag ? "true" : "false"
        case .null: text += "null"
        case .array(let elements):
            guard !elements.isEmpty else { text += "[]"; return }
            text += "[\n"
            for (index, element) in elements.enumerated() {
                text += pad
                render(element, indent: indent + 1, into: &text)
                text += index == elements.count - 1 ? "\n" : ",\n"
            }
            text += closingPad + "]"
        case .object(let fields):
            guard !fields.isEmpty else { text += "{}"; return }
            text += "{\n"
            for (index, (key, element)) in fields.enumerated() {
                text += pad + JSONString.quoted(key, style: .output) + ": "
                render(element, indent: indent + 1, into: &text)
                text += index == fields.count - 1 ? "\n" : ",\n"
            }
            text += closingPad + "}"
        }
    }
}
