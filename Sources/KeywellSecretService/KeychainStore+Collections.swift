import Foundation
import KeywellCore
import KeywellProtocol

/// The Secret Service's names for what the engine offers in its own words: a collection's
/// `Created`/`Modified`, its items and whether it holds one (docs/secret-service.md, "Where the
/// mapping lives").
extension KeychainStore {
    /// A collection's `Created` and `Modified` (`keychainDates`).
    public func secretServiceTimes(of keychain: String) throws(KeychainError) -> (created: Date, modified: Date) {
        try keychainDates(of: keychain)
    }

    /// Every item of the collection, oldest first.
    public func secretServiceItemIDs(in keychain: String) throws(KeychainError) -> [UUID] {
        try itemIDs(in: keychain)
    }

    /// Whether the collection has this item.
    public func secretServiceContains(_ id: UUID, in keychain: String) throws(KeychainError) -> Bool {
        try containsItem(id, in: keychain)
    }
}
