import KeywellNativeClient

/// Items ↔ CSV rows (docs/export-import.md, "CSV"). An internet password's URL is
/// `scheme://server[:port][path]` (the scheme from its protocol code, `//server` without
/// one); a generic password's "URL" is its service. The name column is the label, left out on
/// import when it only repeats the service or server (what an item without a label exports).
enum CSVMapping {
    /// One row's values; the password stays bytes.
    struct Entry {
        var name = ""
        var url = ""
        var username = ""
        var password: [UInt8] = []
        var note = ""
        var realm = ""
    }

    enum Refusal: Error, Equatable {
        case noNameOrURL
        case badPort(String)
    }

    /// The Add attributes (without the secret) for a row.
    static func attributes(for entry: Entry) throws(Refusal) -> WireDictionary {
        var attributes: WireDictionary = [:]
        if let separator = entry.url.firstRange(of: "//"), !entry.url[..<separator.lowerBound].contains("/"),
           entry.url[..<separator.lowerBound].isEmpty || entry.url[..<separator.lowerBound].hasSuffix(":") {
            let scheme = String(entry.url[..<separator.lowerBound].dropLast())
            var rest = Substring(entry.url[separator.upperBound...])
            var path: Substring = ""
            if let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
                path = rest[slash...]
                rest = rest[..<slash]
            }
            if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
            var host = rest
            if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
                let digits = rest[rest.index(after: colon)...]
                guard let port = Int64(digits), (1...65535).contains(port) else { throw .badPort(String(digits)) }
                attributes[AttributeKey.port] = .integer(port)
                host = rest[..<colon]
            }
            attributes[WireKey.class] = .string(WireKey.classInternetPassword)
            attributes[AttributeKey.server] = .string(String(host))
            if !scheme.isEmpty, let code = protocolCode(scheme) { attributes[AttributeKey.`protocol`] = .string(code) }
            if !path.isEmpty { attributes[AttributeKey.path] = .string(String(path)) }
            if !entry.realm.isEmpty { attributes[AttributeKey.securityDomain] = .string(entry.realm) }
            if !entry.name.isEmpty && entry.name != String(host) { attributes[AttributeKey.label] = .string(entry.name) }
        } else {
            let service = entry.url.isEmpty ? entry.name : entry.url
            guard !service.isEmpty else { throw .noNameOrURL }
            attributes[WireKey.class] = .string(WireKey.classGenericPassword)
            attributes[AttributeKey.service] = .string(service)
            if !entry.name.isEmpty && entry.name != service { attributes[AttributeKey.label] = .string(entry.name) }
        }
        attributes[AttributeKey.account] = .string(entry.username)
        if !entry.note.isEmpty { attributes[AttributeKey.comment] = .string(entry.note) }
        return attributes
    }

    /// The primary-key attributes of `attributes`: the query that finds the item they collide with.
    static func keyQuery(_ attributes: WireDictionary) -> WireDictionary {
        let keys = [
            WireKey.class, AttributeKey.account, AttributeKey.service, AttributeKey.server, AttributeKey.`protocol`, AttributeKey.port,
            AttributeKey.path, AttributeKey.securityDomain, AttributeKey.authenticationType,
        ]
        return attributes.filter { keys.contains($0.key) }
    }

    /// `name,url,username,password,note` for an item (its attributes as CopyMatching returns them).
    static func row(_ attributes: WireDictionary, secret: [UInt8]) -> [[UInt8]] {
        func text(_ key: String) -> String? {
            switch attributes[key] {
            case .string(let value)?: value
            case .data(let bytes)?: String(decoding: bytes, as: UTF8.self)
            default: nil
            }
        }
        let url: String
        let fallbackName: String
        if attributes[WireKey.class]?.stringValue == WireKey.classInternetPassword {
            let server = text(AttributeKey.server) ?? ""
            let scheme = text(AttributeKey.`protocol`).map(schemeName) ?? ""
            var port = ""
            if case .integer(let number)? = attributes[AttributeKey.port], number != 0 { port = ":\(number)" }
            url = (scheme.isEmpty ? "//" : scheme + "://") + server + port + (text(AttributeKey.path) ?? "")
            fallbackName = server
        } else {
            url = text(AttributeKey.service) ?? ""
            fallbackName = url
        }
        return [Array((text(AttributeKey.label) ?? fallbackName).utf8), Array(url.utf8), Array((text(AttributeKey.account) ?? "").utf8), secret,
                Array((text(AttributeKey.comment) ?? "").utf8)]
    }

    /// A URL scheme's four-character code: the one git's table has, else the scheme itself when
    /// it fits in four characters (padded with spaces).
    static func protocolCode(_ scheme: String) -> String? {
        if let code = GitProtocolCodes.code(for: scheme) { return code }
        let lower = scheme.lowercased()
        guard !lower.isEmpty, lower.utf8.count <= 4, lower.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return nil }
        return lower + String(repeating: " ", count: 4 - lower.utf8.count)
    }

    private static let schemes: [String: String] = Dictionary(
        GitProtocolCodes.codes.map { ($0.value, $0.key) }, uniquingKeysWith: { first, second in min(first, second) })

    static func schemeName(_ code: String) -> String {
        schemes[code] ?? String(code.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
