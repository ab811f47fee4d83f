import Foundation
import GRDB
import KeywellProtocol

/// `copyMatching`'s three ways of reading one keychain, picked by its lock state and by whether
/// the search returns secrets (docs/native-api.md "Decided details").
extension KeychainStore {
    /// What a search reads beside the matching rows; the same for every keychain it looks in.
    struct MatchReading {
        let columns: ItemTable.Columns
        let lists: Bool
        let freeform: Bool

        init(_ returns: ReturnRequest, judging: Bool) {
            // Attributes are read only when returned; the secret needs just the primary key.
            columns = returns.attributes ? .all : .keyAndSecret
            lists = returns.access || judging
            freeform = returns.attributes && returns.secretServiceAttributes
        }
    }

    /// One keychain's matches and what was read beside them.
    struct KeychainMatches {
        var items: [KeychainItem] = []
        /// By row id; an item missing here trusts any application.
        var accessLists: [Int64: AccessList] = [:]
        /// One per item when `MatchReading.freeform`, else empty.
        var freeform: [[String: String]] = []
        /// Matches left out because the keychain is locked (those without an AfterFirstUnlock copy).
        var lockedLeftOut = false
    }

    /// Locked, asked for secrets, no AfterFirstUnlock copies: no secret can be opened, so only
    /// whether anything matches is asked (the search then fails as locked if nothing else does).
    func lockedKeychainHasMatch(
        _ filter: ItemFilter, in file: KeychainFile, _ mismatches: inout IndexMismatches
    ) throws(KeychainError) -> Bool {
        let matched = try file.database.read { db in
            try ItemTable.fetch(filter, limit: .one, columns: .keyAndSecret, db) { mismatches.add($0) }
        }
        return !matched.isEmpty
    }

    /// Locked: attributes and references answer. `fromSessionCopies` (secrets asked for,
    /// AfterFirstUnlock copies kept): only the items with a copy answer, the others count as locked.
    func lockedMatches(
        _ filter: ItemFilter, in file: KeychainFile, limit remaining: MatchLimit, fromSessionCopies: Bool,
        _ reading: MatchReading, _ mismatches: inout IndexMismatches
    ) throws(KeychainError) -> KeychainMatches {
        var lockedLeftOut = false
        var accessLists: [Int64: AccessList] = [:]
        var freeform: [[String: String]] = []
        // Locked: nothing is checked, so nothing needs one snapshot.
        let items = try file.database.read { db in
            var items = try ItemTable.fetch(filter, limit: fromSessionCopies ? .all : remaining, columns: reading.columns, db) {
                mismatches.add($0)
            }
            if fromSessionCopies {
                let readable = items.filter { file.sessionSecrets.contains($0.uuid) }
                lockedLeftOut = readable.count < items.count
                items = remaining == .all ? readable : Array(readable.prefix(remaining.sqlValue))
            }
            if reading.lists { accessLists = try ItemAccessColumn.read(rowIDs: items.compactMap(\.rowID), db) }
            if reading.freeform { freeform = try items.map { try FreeformAttributeTable.attributes(itemID: $0.rowID!, db) } }
            return items
        }
        return KeychainMatches(items: items, accessLists: accessLists, freeform: freeform, lockedLeftOut: lockedLeftOut)
    }

    /// Unlocked: every match checked against its integrity MAC (a tampered one fails the search).
    /// Access lists and free-form rows come from the same snapshot as the rows the MAC covers.
    func unlockedMatches(
        _ filter: ItemFilter, in file: KeychainFile, integrity: IntegrityKey, limit remaining: MatchLimit,
        _ reading: MatchReading, _ mismatches: inout IndexMismatches
    ) throws(KeychainError) -> KeychainMatches {
        var accessLists: [Int64: AccessList] = [:]
        var freeform: [[String: String]] = []
        let items = try file.database.snapshot { db in
            let items = try ItemTable.fetch(filter, limit: remaining, columns: reading.columns, db) { mismatches.add($0) }
            // The check reads each item's list with what its MAC covers; only judging or
            // returning them needs them split.
            accessLists = try ItemIntegrity.check(items, keychain: file.uuid, key: integrity, path: file.location.path, db,
                                                  readingLists: reading.lists)
            if reading.freeform { freeform = try items.map { try FreeformAttributeTable.attributes(itemID: $0.rowID!, db) } }
            return items
        }
        return KeychainMatches(items: items, accessLists: accessLists, freeform: freeform)
    }
}
