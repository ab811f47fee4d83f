import KeywellProtocol

/// The two item classes the `security` password commands handle, and their attribute schemas
/// in the order `security` prints them (sorted by numeric tag: docs/cli.md "Item blocks").
extension ItemClass {
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
        case .key: Self.keySchema
        }
    }

    private static func attribute(_ tag: String, _ format: Format, kept: Bool = true) -> Attribute {
        Attribute(tag: tag, wireKey: kept ? tag : nil, format: format)
    }

    static let label = Attribute(tag: AttributeKey.label, wireKey: AttributeKey.label, format: .blob)
    static let alias = Attribute(tag: "alis", wireKey: nil, format: .blob)

    /// SSH keys (docs/ssh.md): the comment is the label; the fingerprint, kept as the account,
    /// prints as `"fprt"`.
    private static let keySchema: [Attribute] = [
        label, alias, attribute(AttributeKey.creationDate, .timedate),
        Attribute(tag: "fprt", wireKey: AttributeKey.account, format: .blob), attribute(AttributeKey.modificationDate, .timedate),
    ]

    private static let genericSchema: [Attribute] = [
        label, alias,
        attribute(AttributeKey.account, .blob), attribute(AttributeKey.creationDate, .timedate), attribute(AttributeKey.creator, .uint32),
        attribute("cusi", .sint32, kept: false), attribute(AttributeKey.description, .blob), attribute(AttributeKey.generic, .blob),
        attribute(AttributeKey.comment, .blob), attribute(AttributeKey.invisible, .sint32), attribute(AttributeKey.modificationDate, .timedate),
        attribute(AttributeKey.negative, .sint32), attribute("prot", .blob, kept: false),
        attribute("scrp", .sint32, kept: false), attribute(AttributeKey.service, .blob), attribute(AttributeKey.type, .uint32),
    ]

    private static let internetSchema: [Attribute] = [
        label, alias,
        attribute(AttributeKey.account, .blob), attribute(AttributeKey.authenticationType, .blob), attribute(AttributeKey.creationDate, .timedate),
        attribute(AttributeKey.creator, .uint32), attribute("cusi", .sint32, kept: false), attribute(AttributeKey.description, .blob),
        attribute(AttributeKey.comment, .blob), attribute(AttributeKey.invisible, .sint32), attribute(AttributeKey.modificationDate, .timedate),
        attribute(AttributeKey.negative, .sint32), attribute(AttributeKey.path, .blob), attribute(AttributeKey.port, .uint32),
        attribute("prot", .blob, kept: false), attribute(AttributeKey.`protocol`, .uint32),
        attribute("scrp", .sint32, kept: false), attribute(AttributeKey.securityDomain, .blob), attribute(AttributeKey.server, .blob),
        attribute(AttributeKey.type, .uint32),
    ]
}
