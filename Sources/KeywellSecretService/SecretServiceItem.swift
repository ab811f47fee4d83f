import Foundation
import KeywellCore

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

    /// The Secret Service's view of an item the engine summarised (`SecretServiceMapping`).
    init(_ summary: ItemSummary) {
        var visible = summary.freeform
        for hidden in FreeformItem.hiddenRows { visible[hidden] = nil }
        let label: String
        let attributes: [String: String]
        if summary.isFreeform {
            if case .text(let text)? = summary.attributes[.label] { label = text } else { label = "" }
            attributes = visible
        } else {
            label = SecretServiceMapping.label(itemClass: summary.itemClass, summary.attributes)
            attributes = SecretServiceMapping.derivedAttributes(itemClass: summary.itemClass, summary.attributes)
                .merging(visible) { derived, _ in derived }
        }
        let type = summary.freeform[FreeformItem.typeRow] ?? attributes[SecretServiceMapping.schemaAttribute]
            ?? "org.freedesktop.Secret.Generic"
        self.init(
            id: summary.id, label: label, attributes: attributes, type: type,
            created: summary.date(.creationDate), modified: summary.date(.modificationDate),
            madeBySecretService: summary.isFreeform)
    }
}

/// An item's secret and its MIME content type: the engine's `ItemSecret`, under the name the
/// Secret Service's code has always used.
public typealias SecretServiceSecret = ItemSecret

/// An item's creation and modification times, given when an item is carried over from another
/// Secret Service (`keywell migrate --from-secret-service`) so that it keeps its own.
public typealias SecretServiceItemTimes = ItemDates

/// The access lists of a collection's items, as `SecretServiceAccess` judges them per caller.
public typealias SecretServiceAccessLists = ItemAccessLists

/// What creating an item does with one it would replace (`SecretServiceAccess.replacement`).
public typealias SecretServiceReplacement = ItemReplacement
