import GRDB

/// A column kept beside an attribute's value so that matching and uniqueness see normalised text.
struct MatchColumn: Sendable {
    enum Form: Sendable { case normalized, folded, number }

    let attribute: ItemAttribute
    let form: Form

    var name: String {
        switch form {
        case .normalized, .number: "\(attribute.name)_n"
        case .folded: "\(attribute.name)_f"
        }
    }

    var isNumeric: Bool { form == .number }

    /// The column's value for an item: the transformed attribute, the missing-key default for a
    /// primary-key part the item lacks, or NULL.
    func value(for item: KeychainItem) -> DatabaseValue {
        guard attribute.belongs(to: item.itemClass) else { return .null }
        let value: AttributeValue
        if let present = item.attributes[attribute] {
            value = present
        } else if attribute.isPrimaryKey(of: item.itemClass) {
            value = attribute.missingKeyValue
        } else {
            return .null
        }
        return Self.transform(value, form)
    }

    static func transform(_ value: AttributeValue, _ form: Form) -> DatabaseValue {
        switch (form, value) {
        case (.normalized, .text(let text)): TextMatching.normalized(text).databaseValue
        case (.folded, .text(let text)): TextMatching.folded(text).databaseValue
        case (.number, .integer(let number)): number.databaseValue
        default: .null
        }
    }
}
