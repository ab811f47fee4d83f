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
            text += JSONString.quoted(key, style: .qt) + ":" + JSONString.quoted(map[key] ?? "", style: .qt)
        }
        return Array((text + "}").utf8)
    }
}
