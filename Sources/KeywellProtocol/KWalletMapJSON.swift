/// A KWallet map entry's secret: a compact JSON object of strings, as KWallet 6's Secret Service
/// bridge keeps it (docs/kwallet.md, "One item, four faces"). Shared by keywelld's KWallet API
/// and the import of KWallet's wallet files, so both write the same bytes.
public enum KWalletMapJSON {
    /// Keys in QString order (UTF-16 code units), no spaces, the escapes Qt's JSON writer uses.
    public static func encode(_ map: [String: String]) -> [UInt8] {
        let keys = map.keys.sorted { Array($0.utf16).lexicographicallyPrecedes(Array($1.utf16)) }
        var text = "{"
        for (index, key) in keys.enumerated() {
            if index > 0 { text += "," }
            text += quoted(key) + ":" + quoted(map[key] ?? "")
        }
        return Array((text + "}").utf8)
    }

    private static func quoted(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\u{08}": result += "\\b"
            case "\u{0C}": result += "\\f"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                result += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
