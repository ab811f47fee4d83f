import Foundation
import GRDB
import KeywellProtocol

/// One item as a face that shows items as objects of their own reads it: its identity, the
/// attributes that name and date it, and every free-form row (hidden ones included). What the
/// face makes of them is its business (the Secret Service's view: `SecretServiceItem`).
public struct ItemSummary: Sendable, Equatable {
    public let id: UUID
    public let itemClass: ItemClass
    /// Those of `ItemSummaryRow.attributes` the item has.
    public let attributes: [ItemAttribute: AttributeValue]
    /// Every `item_attribute` row, the hidden ones (`FreeformItem.hiddenRows`) included.
    public let freeform: [String: String]

    /// Whether the item was made from its free-form attributes (`FreeformItem`).
    public var isFreeform: Bool {
        guard case .text(let group)? = attributes[.accessGroup] else { return false }
        return FreeformItem.isFreeform(accessGroup: group)
    }

    /// `cdat` or `mdat` as a date (1970 when missing).
    public func date(_ attribute: ItemAttribute) -> Date {
        guard case .integer(let milliseconds)? = attributes[attribute] else { return Date(timeIntervalSince1970: 0) }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

/// An item's secret and its MIME content type (`FreeformItem.contentTypeRow`, else
/// `FreeformItem.defaultContentType`).
public struct ItemSecret: Sendable, Equatable {
    public let value: Data
    public let contentType: String

    public init(value: Data, contentType: String) {
        self.value = value
        self.contentType = contentType
    }
}

/// An item's creation and modification times, given when an item is carried over from elsewhere
/// (a migration) so that it keeps its own.
public struct ItemDates: Sendable, Equatable {
    public let created: Date
    public let modified: Date

    public init(created: Date, modified: Date) {
        self.created = created
        self.modified = modified
    }
}

/// The columns `ItemSummary` reads of an item: identity, label, dates, what native conditions
/// compare and, when asked, the sealed secret. Enough to open the secret (its associated data
/// needs the primary key only).
struct ItemSummaryRow {
    static let attributes: [ItemAttribute] = [
        .account, .service, .server, .protocol, .port, .path, .securityDomain, .authenticationType, .accessGroup,
        .label, .creationDate, .modificationDate,
    ]
    static let columns = (["item.id", "item.uuid", "item.class"] + attributes.map { "item.\"\($0.name)\"" })
        .joined(separator: ", ")

    let item: KeychainItem

    var rowID: Int64 { item.rowID! }
    var isFreeform: Bool {
        guard case .text(let group)? = item.attributes[.accessGroup] else { return false }
        return FreeformItem.isFreeform(accessGroup: group)
    }

    /// The item's own label, "" when it has none.
    var label: String {
        if case .text(let text)? = item.attributes[.label] { return text }
        return ""
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

    /// The public summary, given the item's free-form rows.
    func summary(freeform: [String: String]) -> ItemSummary {
        ItemSummary(id: item.uuid, itemClass: item.itemClass, attributes: item.attributes, freeform: freeform)
    }
}
