import Foundation
import GRDB
import KeywellProtocol

/// One keychain item as the Secret Service shows it.
public struct SecretServiceItem: Sendable, Equatable {
    public let id: UUID
    public let label: String
    /// The Secret Service attributes: the item's own for items made through the Secret Service,
    /// derived ones (plus any free-form ones) for native items.
    public let attributes: [String: String]
    /// `Item.Type`: the type given at creation, else `xdg:schema`, else the generic schema.
    public let type: String
    public let created: Date
    public let modified: Date
    /// False for items made through the native API.
    public let madeBySecretService: Bool

    public init(
        id: UUID, label: String, attributes: [String: String], type: String, created: Date, modified: Date,
        madeBySecretService: Bool
    ) {
        self.id = id
        self.label = label
        self.attributes = attributes
        self.type = type
        self.created = created
        self.modified = modified
        self.madeBySecretService = madeBySecretService
    }
}

/// An item's secret and its MIME content type.
public struct SecretServiceSecret: Sendable, Equatable {
    public let value: Data
    public let contentType: String

    public init(value: Data, contentType: String) {
        self.value = value
        self.contentType = contentType
    }
}

/// An item's creation and modification times, given when an item is carried over from another
/// Secret Service (`keywell migrate --from-secret-service`) so that it keeps its own.
public struct SecretServiceItemTimes: Sendable, Equatable {
    public let created: Date
    public let modified: Date

    public init(created: Date, modified: Date) {
        self.created = created
        self.modified = modified
    }
}

/// The columns the Secret Service reads of an item: identity, label, dates and, when asked, the
/// sealed secret. Enough to open the secret (its associated data needs the primary key only).
struct SecretServiceRow {
    static let attributes: [ItemAttribute] = [
        .account, .service, .server, .protocol, .port, .path, .securityDomain, .authenticationType, .accessGroup,
        .label, .creationDate, .modificationDate,
    ]
    static let columns = (["item.id", "item.uuid", "item.class"] + attributes.map { "item.\"\($0.name)\"" })
        .joined(separator: ", ")

    let item: KeychainItem

    var rowID: Int64 { item.rowID! }
    var isSecretServiceItem: Bool {
        guard case .text(let group)? = item.attributes[.accessGroup] else { return false }
        return FreeformItem.isFreeform(accessGroup: group)
    }

    /// Decodes `columns` (then, with `withSecret`, the sealed secret) starting at column 0.
    init(_ row: RawStatement, withSecret: Bool) throws {
        guard let uuid = row.uuid(1), let itemClass = ItemClass(rawValue: row.text(2)) else {
            throw KeychainError(SecStatus.invalidKeychain, detail: "item row \(row.integer(0)) is damaged")
        }
        var attributes: [ItemAttribute: AttributeValue] = [:]
        for (offset, attribute) in Self.attributes.enumerated() {
            let column = Int32(3 + offset)
            guard !row.isNull(column) else { continue }
            switch attribute.kind {
            case .integer, .date: attributes[attribute] = .integer(row.integer(column))
            default: attributes[attribute] = .text(row.text(column))
            }
        }
        let sealed = withSecret ? row.blob(Int32(3 + Self.attributes.count)) : Data()
        item = KeychainItem(rowID: row.integer(0), uuid: uuid, itemClass: itemClass, attributes: attributes, sealedSecret: sealed)
    }

    /// The public view, given the item's free-form rows.
    func view(freeform: [String: String]) -> SecretServiceItem {
        var visible = freeform
        for hidden in FreeformItem.hiddenRows { visible[hidden] = nil }
        let label: String
        let attributes: [String: String]
        if isSecretServiceItem {
            if case .text(let text)? = item.attributes[.label] { label = text } else { label = "" }
            attributes = visible
        } else {
            label = SecretServiceMapping.label(itemClass: item.itemClass, item.attributes)
            attributes = SecretServiceMapping.derivedAttributes(itemClass: item.itemClass, item.attributes)
                .merging(visible) { derived, _ in derived }
        }
        let type = freeform[FreeformItem.typeRow] ?? attributes[SecretServiceMapping.schemaAttribute]
            ?? "org.freedesktop.Secret.Generic"
        return SecretServiceItem(
            id: item.uuid, label: label, attributes: attributes, type: type,
            created: date(.creationDate), modified: date(.modificationDate), madeBySecretService: isSecretServiceItem)
    }

    private func date(_ attribute: ItemAttribute) -> Date {
        guard case .integer(let milliseconds)? = item.attributes[attribute] else { return Date(timeIntervalSince1970: 0) }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
