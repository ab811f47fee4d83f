import KeywellProtocol

#if canImport(Glibc)
import Glibc
#endif

/// `--json` shape of an item. Every field of the class is present (null when the item has no
/// value), so scripts can rely on the keys; `password` appears only when -w/-g (find) or -d
/// (dump) asked for secrets. Names follow Apple's kSecAttr constants:
///
/// - both classes: `keychain` (path), `class` (`genp`/`inet`), `label`, `account`,
///   `description` (-D, "kind"), `comment` (-j), `creator` (-c), `type` (-C), `created`,
///   `modified` (ISO 8601, UTC, milliseconds), `invisible`, `negative`
/// - `genp`: `service` (-s), `generic` (-G)
/// - `inet`: `server` (-s), `protocol` (-r), `port` (-P), `path` (-p), `securityDomain` (-d),
///   `authenticationType` (-t)
///
/// Text that is not UTF-8 appears as `{"hex": "…"}`.
///
/// `dump-keychain --json` adds `accessGroup`, `accessibility` and `secretService`: the item's own Secret Service attributes (an
/// object, empty for items made through the native API), `contentType` and `type` (null when
/// the defaults).
enum ItemJSON {
    private static let common: [(String, String)] = [("label", AttributeKey.label), ("account", AttributeKey.account)]
    private static let generic: [(String, String)] = [("service", AttributeKey.service), ("generic", AttributeKey.generic)]
    private static let internet: [(String, String)] = [
        ("server", AttributeKey.server), ("protocol", AttributeKey.`protocol`), ("port", AttributeKey.port), ("path", AttributeKey.path),
        ("securityDomain", AttributeKey.securityDomain), ("authenticationType", AttributeKey.authenticationType),
    ]
    private static let trailing: [(String, String)] = [
        ("description", AttributeKey.description), ("comment", AttributeKey.comment), ("creator", AttributeKey.creator), ("type", AttributeKey.type),
        ("created", AttributeKey.creationDate), ("modified", AttributeKey.modificationDate), ("invisible", AttributeKey.invisible), ("negative", AttributeKey.negative),
    ]

    static func item(_ item: FoundItem, keychainPath: String, includeSecret: Bool, includeAccess: Bool = false,
                     error: String? = nil) -> JSONValue {
        var fields: [(String, JSONValue)] = [
            ("keychain", .string(keychainPath)),
            ("class", .string(item.itemClass.rawValue)),
        ]
        let specific: [(String, String)] =
            switch item.itemClass {
            case .genericPassword: generic
            case .internetPassword: internet
            // An SSH key's account is its fingerprint (docs/ssh.md).
            case .key: [("fingerprint", AttributeKey.account)]
            }
        for (name, key) in common + specific + trailing {
            fields.append((name, value(item, key)))
        }
        if case .strings(let pairs)? = item.attributes[WireKey.secretServiceAttributes] {
            fields.append(("accessGroup", value(item, AttributeKey.accessGroup)))
            fields.append(("accessibility", value(item, AttributeKey.accessible)))
            var attributes: [(String, JSONValue)] = []
            for index in stride(from: 0, to: pairs.count - 1, by: 2) { attributes.append((pairs[index], .string(pairs[index + 1]))) }
            fields.append(("secretService", .object([
                ("attributes", .object(attributes)),
                ("contentType", item.text(WireKey.secretServiceContentType).map(JSONValue.string) ?? .null),
                ("type", item.text(WireKey.secretServiceType).map(JSONValue.string) ?? .null),
            ])))
        }
        if includeSecret, let secret = item.secret {
            // The JSON document holds its own copy until it is printed (docs/cli.md, "Secrets in memory").
            fields.append(("password", .bytes(secret.withUnsafeBytes { [UInt8]($0) })))
        }
        if includeAccess {
            // "any" for any application, else the identities in order ([] for none).
            let access: JSONValue = switch item.access {
            case .applications(let identities)?: .array(identities.map { .string($0) })
            case .anyApplication?, nil: .string(WireKey.accessAnyApplication)
            }
            fields.append(("access", access))
        }
        if let error { fields.append(("error", .string(error))) }
        return .object(fields)
    }

    private static func value(_ item: FoundItem, _ key: String) -> JSONValue {
        guard let wire = item.attributes[key] else { return .null }
        switch (key, wire) {
        case (AttributeKey.creationDate, .integer(let milliseconds)), (AttributeKey.modificationDate, .integer(let milliseconds)):
            return .string(iso8601(milliseconds: milliseconds))
        case (AttributeKey.port, .integer(let number)):
            return .number(number)
        case (AttributeKey.creator, .integer(let number)), (AttributeKey.type, .integer(let number)):
            return .bytes(FourCharCode.bytes(UInt32(truncatingIfNeeded: number)))
        case (_, .bool(let flag)):
            return .bool(flag)
        case (_, .integer(let number)):
            return .number(number)
        default:
            return .bytes(item.bytes(key) ?? [])
        }
    }

    static func iso8601(milliseconds: Int64) -> String {
        let fraction = ((milliseconds % 1000) + 1000) % 1000
        var seconds = time_t((milliseconds - fraction) / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return digits(Int64(parts.tm_year) + 1900, 4) + "-" + digits(Int64(parts.tm_mon) + 1, 2) + "-"
            + digits(Int64(parts.tm_mday), 2) + "T" + digits(Int64(parts.tm_hour), 2) + ":"
            + digits(Int64(parts.tm_min), 2) + ":" + digits(Int64(parts.tm_sec), 2) + "." + digits(fraction, 3) + "Z"
    }
}
