import Foundation
import KeywellProtocol

/// What items a query matches in one keychain: SQL-ready criteria from a parsed query.
struct ItemFilter: Sendable {
    /// Nil only for a query by persistent reference, which may leave the class out.
    var itemClass: ItemClass?
    var itemUUID: UUID?
    var attributes: [ItemAttribute: AttributeValue] = [:]
    var caseInsensitive = false
}

/// How many matches a search returns.
enum MatchLimit: Equatable, Sendable {
    case count(Int)
    case all

    static let one = MatchLimit.count(1)

    var sqlValue: Int {
        switch self {
        case .count(let count): count
        case .all: -1
        }
    }
}
