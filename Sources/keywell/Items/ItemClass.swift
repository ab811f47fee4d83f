import KeywellProtocol

/// The two item classes the `security` password commands handle, and their attribute schemas
/// in the order `security` prints them (sorted by numeric tag: docs/cli.md "Item blocks").
enum ItemClass: String {
    case genericPassword = "genp"
    case internetPassword = "inet"

    /// How an attribute's value is stored in the legacy schema, which decides how it prints.
    enum Format: String {
        case blob, uint32, sint32, timedate
    }

    struct Attribute {
        /// The four-character tag; label and alias print as the numbers 7 and 8 instead.
        let tag: String
        /// The native API key, nil for legacy attributes Keywell does not keep (always `<NULL>`).
        let wireKey: String?
        let format: Format
    }

    var schema: [Attribute] {
        switch self {
        case .genericPassword: Self.genericSchema
        case .internetPassword: Self.internetSchema
        }
    }

    private static func attribute(_ tag: String, _ format: Format, kept: Bool = true) -> Attribute {
        Attribute(tag: tag, wireKey: kept ? tag : nil, format: format)
    }

    static let label = Attribute(tag: "labl", wireKey: "labl", format: .blob)
    static let alias = Attribute(tag: "alis", wireKey: nil, format: .blob)

    private static let genericSchema: [Attribute] = [
        label, alias,
        attribute("acct", .blob), attribute("cdat", .timedate), attribute("crtr", .uint32),
        attribute("cusi", .sint32, kept: false), attribute("desc", .blob), attribute("gena", .blob),
        attribute("icmt", .blob), attribute("invi", .sint32), attribute("mdat", .timedate),
        attribute("nega", .sint32), attribute("prot", .blob, kept: false),
        attribute("scrp", .sint32, kept: false), attribute("svce", .blob), attribute("type", .uint32),
    ]

    private static let internetSchema: [Attribute] = [
        label, alias,
        attribute("acct", .blob), attribute("atyp", .blob), attribute("cdat", .timedate),
        attribute("crtr", .uint32), attribute("cusi", .sint32, kept: false), attribute("desc", .blob),
        attribute("icmt", .blob), attribute("invi", .sint32), attribute("mdat", .timedate),
        attribute("nega", .sint32), attribute("path", .blob), attribute("port", .uint32),
        attribute("prot", .blob, kept: false), attribute("ptcl", .uint32),
        attribute("scrp", .sint32, kept: false), attribute("sdmn", .blob), attribute("srvr", .blob),
        attribute("type", .uint32),
    ]
}
