/// A JSON string literal, for the two writers that make JSON by hand: the CLI's `--json` output
/// (docs/cli.md) and KWallet map secrets, which must match Qt's JSON writer byte for byte
/// (docs/kwallet.md). Both escape `"`, `\`, LF, CR and tab by name and other control characters
/// as `\uXXXX`; they differ only where the style says.
public enum JSONString {
    public enum Style: Sendable {
        /// The CLI's: DEL as `\u007f` too, so a terminal never receives it raw.
        case output
        /// Qt's `QJsonDocument::Compact`: backspace and form feed by name (`\b`, `\f`), DEL as is.
        case qt
    }

    public static func quoted(_ string: String, style: Style) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}" where style == .qt: out += "\\b"
            case "\u{0C}" where style == .qt: out += "\\f"
            case _ where scalar.value < 0x20 || (scalar.value == 0x7F && style == .output):
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
