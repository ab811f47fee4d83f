import Foundation
import KeywellCore
import KeywellProtocol

/// How Secret Service items and keychain items are one and the same record.
///
/// An item made through the Secret Service is a free-form item (`FreeformItem`): a `genp` item
/// whose free-form attributes (the `item_attribute` rows) are exactly its Secret Service attributes. Its native attributes are
/// derived so that `keywell find-generic-password` and `SecItemCopyMatching` find it: `labl` is
/// its label, `svce` comes from `service` (else `xdg:schema`, else the label), `acct` from
/// `account`, `username` or `user` (else empty). Its `agrp` is `org.freedesktop.secrets/` and the
/// item's UUID in hex: unique per item, so the genp primary key (acct, svce, agrp) never makes
/// two Secret Service items collide, whatever their attributes (the Secret Service allows
/// identical attribute sets); stable, so it survives attribute changes; and a marker that tells
/// Secret Service items from native ones.
///
/// A native item shows in the Secret Service with attributes derived from its native ones (see
/// `derivedAttributes`), plus free-form ones if it has any.
enum SecretServiceMapping {
    static let genericSchema = "org.keywell.generic-password"
    static let internetSchema = "org.keywell.internet-password"
    static let schemaAttribute = "xdg:schema"

    static func service(label: String, attributes: [String: String]) -> String {
        attributes["service"] ?? attributes[schemaAttribute] ?? label
    }

    static func account(attributes: [String: String]) -> String {
        attributes["account"] ?? attributes["username"] ?? attributes["user"] ?? ""
    }

    /// The native attributes a Secret Service item's label and attributes determine.
    static func derivedNativeAttributes(label: String, attributes: [String: String]) -> [ItemAttribute: AttributeValue] {
        [
            .label: .text(label),
            .service: .text(service(label: label, attributes: attributes)),
            .account: .text(account(attributes: attributes)),
        ]
    }

    // MARK: Native items seen through the Secret Service

    /// The Secret Service attributes of a native item.
    static func derivedAttributes(itemClass: ItemClass, _ attributes: [ItemAttribute: AttributeValue]) -> [String: String] {
        func text(_ attribute: ItemAttribute) -> String? {
            if case .text(let value)? = attributes[attribute] { return value }
            return nil
        }
        var result: [String: String] = [:]
        switch itemClass {
        case .genericPassword:
            result[schemaAttribute] = genericSchema
            result["service"] = text(.service)
            result["account"] = text(.account)
        case .internetPassword:
            result[schemaAttribute] = internetSchema
            result["server"] = text(.server)
            result["user"] = text(.account)
            result["protocol"] = text(.protocol).map(protocolName)
            if case .integer(let port)? = attributes[.port], port != 0 { result["port"] = String(port) }
            result["path"] = text(.path)
            result["domain"] = text(.securityDomain)
            result["authtype"] = text(.authenticationType).map { $0.trimmingCharacters(in: .whitespaces) }
        case .key:
            // Key items are free-form items: their attributes are their own rows.
            break
        }
        return result
    }

    /// The label a native item shows: its own, else what macOS shows (service or server).
    static func label(itemClass: ItemClass, _ attributes: [ItemAttribute: AttributeValue]) -> String {
        for attribute in [ItemAttribute.label, itemClass == .genericPassword ? .service : .server] {
            if case .text(let value)? = attributes[attribute] { return value }
        }
        return ""
    }

    /// Apple's four-character protocol codes as the URL schemes gnome-keyring's network schema uses.
    private static let protocolNames: [String: String] = [
        "htps": "https", "ftps": "ftps", "imps": "imaps", "pops": "pop3s", "ldps": "ldaps", "ircs": "ircs",
        "teln": "telnet", "tels": "telnets", "nntp": "nntp", "ntps": "nntps", "afp ": "afp", "cifs": "cifs",
    ]
    private static let protocolCodes: [String: String] = Dictionary(
        uniqueKeysWithValues: protocolNames.map { ($0.value, $0.key) })

    static func protocolName(_ code: String) -> String {
        protocolNames[code] ?? code.trimmingCharacters(in: .whitespaces)
    }

    /// The code whose name is `name`, or nil when no code has that name.
    static func protocolCode(_ name: String) -> String? {
        if let code = protocolCodes[name] { return code }
        guard !name.isEmpty, name.utf8.count <= 4, name == name.trimmingCharacters(in: .whitespaces) else { return nil }
        let padded = name.padding(toLength: 4, withPad: " ", startingAt: 0)
        // "htps" itself is shown as "https", so the raw code names nothing.
        return protocolNames[padded] == nil ? padded : nil
    }

    /// A search's conditions on native columns, for each class some native item of which can
    /// have all of these attributes (the engine's `freeformMatches` reads native items by them).
    static func nativeConditions(for query: [String: String]) -> KeychainStore.NativeConditions {
        // A schema of its own (KWallet's entries, most apps' items) rules out every native item:
        // no need to go through the classes on each such search (KWallet's hot path).
        if let schema = query[schemaAttribute], schema != genericSchema, schema != internetSchema { return [:] }
        var conditions: KeychainStore.NativeConditions = [:]
        for itemClass in ItemClass.allCases {
            conditions[itemClass] = nativeConditions(for: query, itemClass: itemClass)
        }
        return conditions
    }

    /// A search's conditions on native columns, for one class; nil when no native item of that
    /// class can have all of these attributes.
    static func nativeConditions(
        for query: [String: String], itemClass: ItemClass
    ) -> [(attribute: ItemAttribute, value: AttributeValue)]? {
        // Key items are always free-form: no native conditions reach them.
        guard itemClass != .key else { return nil }
        // In the query's order first: most searches name an attribute no native item has, and
        // learn it without sorting. Sorted by name after, so the same query makes the same SQL.
        var conditions: [(name: String, attribute: ItemAttribute, value: AttributeValue)] = []
        for (name, value) in query {
            switch (itemClass, name) {
            case (_, schemaAttribute):
                guard value == (itemClass == .genericPassword ? genericSchema : internetSchema) else { return nil }
            case (.genericPassword, "service"): conditions.append((name, .service, .text(value)))
            case (.genericPassword, "account"), (.internetPassword, "user"): conditions.append((name, .account, .text(value)))
            case (.internetPassword, "server"): conditions.append((name, .server, .text(value)))
            case (.internetPassword, "path"): conditions.append((name, .path, .text(value)))
            case (.internetPassword, "domain"): conditions.append((name, .securityDomain, .text(value)))
            case (.internetPassword, "protocol"):
                guard let code = protocolCode(value) else { return nil }
                conditions.append((name, .protocol, .text(code)))
            case (.internetPassword, "authtype"):
                guard !value.isEmpty, value.utf8.count <= 4 else { return nil }
                conditions.append((name, .authenticationType, .text(value.padding(toLength: 4, withPad: " ", startingAt: 0))))
            case (.internetPassword, "port"):
                guard let port = Int64(value), port > 0, String(port) == value else { return nil }
                conditions.append((name, .port, .integer(port)))
            default:
                return nil
            }
        }
        return conditions.sorted { $0.name < $1.name }.map { ($0.attribute, $0.value) }
    }
}

/// The attribute that names an item's schema, for the daemon's faces outside this module.
public enum SecretServiceSchema {
    public static let attribute = SecretServiceMapping.schemaAttribute
}
