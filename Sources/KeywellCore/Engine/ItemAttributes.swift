import Foundation
import KeywellProtocol

/// Each item class's primary key (docs/native-api.md "Primary keys", the data-protection set).
extension ItemClass {
    /// Attributes whose values together make an item unique in its keychain.
    package var primaryKey: [ItemAttribute] {
        switch self {
        case .genericPassword: Self.genericPasswordKey
        case .internetPassword: Self.internetPasswordKey
        case .key: Self.keyKey
        }
    }

    /// Every attribute that is part of either class's primary key, in `ItemAttribute` order.
    static let anyPrimaryKey = ItemAttribute.allCases.filter { attribute in
        allCases.contains { $0.primaryKey.contains(attribute) }
    }

    private static let genericPasswordKey: [ItemAttribute] = [.account, .service, .accessGroup]
    /// A key item's account is its fingerprint. No unique index holds it (files keep their
    /// schema): the SSH agent replaces a key item instead of adding a second one.
    private static let keyKey: [ItemAttribute] = [.account, .accessGroup]
    private static let internetPasswordKey: [ItemAttribute] = [
        .account, .securityDomain, .server, .protocol, .authenticationType, .port, .path, .accessGroup,
    ]

    static func parse(_ value: WireValue) throws(KeychainError) -> ItemClass {
        guard let name = value.stringValue else { throw .param("class must be a string") }
        guard let itemClass = ItemClass(rawValue: name) else {
            throw KeychainError(SecStatus.noSuchClass, detail: "unknown class \"\(name)\"")
        }
        return itemClass
    }
}

/// How an attribute travels and is stored.
package enum AttributeKind: Sendable {
    /// A string (`s`, or UTF-8 bytes).
    case text
    /// Four characters (`htps`); `crtr` and `type` also accept a big-endian integer.
    case fourCharCode
    /// A non-negative integer (`port`).
    case integer
    case bool
    /// Bytes (`gena`).
    case data
    /// Milliseconds since 1970, set by the engine.
    case date
}

/// One attribute of docs/native-api.md's list. Its name is the wire key and the database column.
/// An enum, so that the dictionaries of attributes on every call hash a small integer.
public enum ItemAttribute: Int, CaseIterable, Sendable {
    case account, service, generic, server, `protocol`, port, path, securityDomain, authenticationType
    case label, description, comment, creator, type, invisible, negative, accessGroup, accessibility
    case creationDate, modificationDate

    package var name: String {
        switch self {
        case .account: AttributeKey.account
        case .service: AttributeKey.service
        case .generic: AttributeKey.generic
        case .server: AttributeKey.server
        case .protocol: AttributeKey.`protocol`
        case .port: AttributeKey.port
        case .path: AttributeKey.path
        case .securityDomain: AttributeKey.securityDomain
        case .authenticationType: AttributeKey.authenticationType
        case .label: AttributeKey.label
        case .description: AttributeKey.description
        case .comment: AttributeKey.comment
        case .creator: AttributeKey.creator
        case .type: AttributeKey.type
        case .invisible: AttributeKey.invisible
        case .negative: AttributeKey.negative
        case .accessGroup: AttributeKey.accessGroup
        case .accessibility: AttributeKey.accessible
        case .creationDate: AttributeKey.creationDate
        case .modificationDate: AttributeKey.modificationDate
        }
    }

    package var kind: AttributeKind {
        switch self {
        case .generic: .data
        case .protocol, .authenticationType, .creator, .type: .fourCharCode
        case .port: .integer
        case .invisible, .negative: .bool
        case .creationDate, .modificationDate: .date
        default: .text
        }
    }

    /// The class that alone has this attribute; nil when both have it.
    var onlyIn: ItemClass? {
        switch self {
        case .service, .generic: .genericPassword
        case .server, .protocol, .port, .path, .securityDomain, .authenticationType: .internetPassword
        default: nil
        }
    }

    package static let byName: [String: ItemAttribute] = Dictionary(uniqueKeysWithValues: allCases.map { ($0.name, $0) })

    var isReadOnly: Bool { kind == .date }

    package func belongs(to itemClass: ItemClass) -> Bool { onlyIn == nil || onlyIn == itemClass }

    func isPrimaryKey(of itemClass: ItemClass) -> Bool { itemClass.primaryKey.contains(self) }

    /// The value of a primary-key part the item does not have: "" or 0.
    package var missingKeyValue: AttributeValue { kind == .integer ? .integer(0) : .text("") }

    /// Text compared after normalisation: plain and case-insensitive matches use their own columns.
    var isTextual: Bool { kind == .text || kind == .fourCharCode }
}

/// An attribute value as stored and matched.
public enum AttributeValue: Hashable, Sendable {
    case text(String)
    case integer(Int64)
    case bool(Bool)
    case data(Data)

    package var wireValue: WireValue {
        switch self {
        case .text(let text): .string(text)
        case .integer(let number): .integer(number)
        case .bool(let flag): .bool(flag)
        case .data(let bytes): .data(bytes)
        }
    }
}
