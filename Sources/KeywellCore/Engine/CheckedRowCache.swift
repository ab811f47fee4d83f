import Foundation
import KeywellProtocol
import KeywellSystem

/// One item as a checked read found it, kept for later reads: what a screened read needs, and
/// nothing opened. Only rows whose MAC verified are made into one.
///
/// A class of constants: a read hands out the rows it matched, and copying a struct of these
/// fields out of the cache retained each of them (the list text, the free-form rows, both halves
/// of the sealed secret) through an unspecialized value witness, about a tenth of keywelld's CPU
/// in a GetSecrets of 1,000 items (docs/performance.md, "GetSecrets of many items"); a reference
/// is one retain.
final class CheckedRow: Sendable {
    let rowID: Int64
    let uuid: UUID
    /// The access column as read; the MAC vouched for it.
    let access: ItemIntegrity.StoredAccess
    let freeform: [(name: [UInt8], value: [UInt8])]
    /// The secret as stored: ciphertext and the associated data it must open with.
    let sealed: SealedSecret
    /// Not made from free-form attributes: a search's native conditions could match it.
    let isNative: Bool
    /// The secret's content type, found once: every secret handed out carries it, and looking
    /// through the rows for it was a twentieth of a kept GetSecret.
    let contentType: String

    init(rowID: Int64, uuid: UUID, access: ItemIntegrity.StoredAccess, freeform: [(name: [UInt8], value: [UInt8])],
         sealed: SealedSecret, isNative: Bool) {
        self.rowID = rowID
        self.uuid = uuid
        self.access = access
        self.freeform = freeform
        self.sealed = sealed
        self.isNative = isNative
        contentType = freeform.first { Self.bytes($0.name, are: FreeformItem.contentTypeRow) }
            .map { String(decoding: $0.value, as: UTF8.self) } ?? FreeformItem.defaultContentType
    }

    /// This row's verdict and, when allowed and `master` is given, its opened secret: a method,
    /// so that the row's fields are read in place. Read from outside, each field (the list text,
    /// both halves of the sealed secret) was retained and released per row.
    func screened(_ judge: inout VerdictsOfRead, master: SecretBytes?) throws(KeychainError) -> (AccessVerdict, ItemSecret?) {
        let verdict = try judge.verdict(access, item: uuid, rowID: rowID)
        guard verdict == .allowed, let master else { return (verdict, nil) }
        return (verdict, try opened(master))
    }

    /// This row's verdict alone (a read that opens the secrets afterwards, `openedInHalves`).
    func verdict(_ judge: inout VerdictsOfRead) throws(KeychainError) -> AccessVerdict {
        try judge.verdict(access, item: uuid, rowID: rowID)
    }

    /// The secret opened: for an allowed row only.
    func opened(_ master: SecretBytes) throws(KeychainError) -> ItemSecret {
        ItemSecret(value: try Sodium.open(sealed.sealed, key: master, associatedData: sealed.associatedData), contentType: contentType)
    }

    func freeformValue(_ name: String) -> String? {
        // Compared in place: no copy of the name per row asked (every read asks).
        freeform.first { Self.bytes($0.name, are: name) }.map { String(decoding: $0.value, as: UTF8.self) }
    }

    /// Byte for byte, as SQLite compares TEXT (`FreeformSearchCheck`), in place.
    func hasEveryPair(_ pairs: [String: String]) -> Bool {
        pairs.allSatisfy { pair in
            freeform.contains { Self.bytes($0.name, are: pair.key) && Self.bytes($0.value, are: pair.value) }
        }
    }

    /// `bytes` are `text`'s UTF-8, compared as two buffers: `elementsEqual` against a
    /// `String.UTF8View` went through its protocol witnesses byte by byte.
    static func bytes(_ bytes: [UInt8], are text: String) -> Bool {
        guard bytes.count == text.utf8.count else { return false }
        let inPlace = text.utf8.withContiguousStorageIfAvailable { theirs in
            bytes.withUnsafeBufferPointer { UnsafeBufferPointer.sameBytes($0, theirs) }
        }
        return inPlace ?? bytes.elementsEqual(text.utf8)
    }

    /// Roughly what keeping it costs, for the cap.
    var bytes: Int {
        var total = 128 + sealed.sealed.count + sealed.associatedData.count
        if case .text(let text) = access { total += text.utf8.count }
        for pair in freeform { total += 64 + pair.name.count + pair.value.count }
        return total
    }
}

/// One open keychain's items, every one checked, kept between reads so that a screened read
/// (a search by free-form attributes, items by id) skips SQLite's statements and the MAC checks
/// (docs/performance.md, "Checked rows kept between reads"; docs/file-format.md, "Checked rows
/// kept between reads"). Lives in `KeychainFile`'s locked state, next to the master key, and is
/// emptied in the same step that drops the key.
///
/// Valid only while its `Tag` is the current one: the reading connection's `PRAGMA data_version`
/// (any commit by another connection or process) and the database's count of this process's
/// writes. A read compares the tag before it takes anything; a different one empties the cache.
/// Holds sealed secrets only: every secret is opened per call, after that call's verdict.
///
/// Filled whole, in one snapshot, once the reads under one tag spent on the statements what a
/// load costs (`wantsLoad`).
struct CheckedRowCache {
    struct Tag: Equatable {
        let dataVersion: Int64
        let writes: UInt64
    }

    /// At most this many items and `byteCap` bytes of rows: a bigger keychain is read through
    /// the statements.
    static let itemCap = 4096
    static let byteCap = 8 << 20

    /// The tag the work counted in `spentUnderTag` (or the rows kept) belong to.
    private(set) var tag: Tag?
    /// What the statements' reads under `tag` cost, in items checked (a read's own cost counts
    /// as `readCost` items).
    private var spentUnderTag = 0
    static let readCost = 6
    /// Nothing is tried again under this tag: the keychain was over a cap or a row failed.
    private var refused = false
    /// The last load's item count, to price the next one.
    private var lastCount = 0
    private(set) var rows: [CheckedRow]?
    private var byUUID: [UUID: Int] = [:]
    /// Free-form pair → the positions in `rows` of the items that have it, ascending. Keyed by
    /// the pair read as text, so a search's strings look it up without copying them into bytes:
    /// every item whose bytes are the search's text is under its key (bytes that are not UTF-8,
    /// or text Swift finds equal but spelt otherwise, only add candidates), and `hasEveryPair`
    /// then keeps only the byte-for-byte matches.
    private var byPair: [Pair: Positions] = [:]
    private var hasNativeItems = false
    /// The last free-form search and its rows, under the tag the rows are kept for: a client
    /// asks the same question again and again (libsecret's lookup of one password), and
    /// hashing its pairs and checking the candidates was most of a kept search
    /// (docs/performance.md, "Reads with fewer steps"). Matched byte for byte; one per open
    /// keychain, dropped with the rows.
    private var lastSearch: (pairs: [String: String], rows: [CheckedRow])?

    private struct Pair: Hashable {
        let name: String
        let value: String
    }

    /// Ascending positions, the first in the table itself: most pairs of a big keychain name
    /// one item (its user name, its id), and a lookup then reads no array out of the table (a
    /// miss in the processor's cache per pair asked, for the item asked is rarely the last one).
    private struct Positions {
        var first: Int
        var rest: [Int] = []
        var count: Int { 1 + rest.count }
        var last: Int { rest.last ?? first }
    }

    var isLoaded: Bool { rows != nil }
    var itemCount: Int { rows?.count ?? 0 }

    mutating func removeAll() {
        tag = nil
        spentUnderTag = 0
        refused = false
        rows = nil
        byUUID = [:]
        byPair = [:]
        hasNativeItems = false
        lastSearch = nil
    }

    /// Starts over when `current` is not the tag of what is kept or counted.
    private mutating func settle(_ current: Tag) {
        guard tag != current else { return }
        let count = lastCount
        removeAll()
        lastCount = count
        tag = current
    }

    /// Whether a read under `current` should load every item first: not when over the caps,
    /// and only once the statements' reads under it cost as much as a load (the last load's
    /// item count, at least 32): a keychain written between every few reads keeps reading
    /// through the statements, and pays at most twice what they cost.
    mutating func wantsLoad(_ current: Tag) -> Bool {
        settle(current)
        guard rows == nil, !refused else { return false }
        return spentUnderTag >= max(32, lastCount)
    }

    /// A read under `current` went to the statements and checked `items` items.
    mutating func spent(_ items: Int, under current: Tag) {
        guard tag == current else { return }
        spentUnderTag += Self.readCost + items
    }

    /// What a load under `current` found: every item, checked, in row id order; nil when the
    /// keychain is over a cap or a row failed (nothing is tried again under that tag).
    mutating func load(_ found: [CheckedRow]?, tag loaded: Tag, current: Tag) {
        guard loaded == current else { return }
        settle(current)
        guard let found, found.count <= Self.itemCap, found.reduce(0, { $0 + $1.bytes }) <= Self.byteCap else {
            refused = true
            return
        }
        lastCount = found.count
        rows = found
        lastSearch = nil
        byUUID.reserveCapacity(found.count)
        for (index, row) in found.enumerated() {
            byUUID[row.uuid] = index
            hasNativeItems = hasNativeItems || row.isNative
            for pair in row.freeform {
                let key = Pair(name: String(decoding: pair.name, as: UTF8.self), value: String(decoding: pair.value, as: UTF8.self))
                // An item listed once under a key, even if two of its pairs read as the same text.
                if byPair[key] == nil {
                    byPair[key] = Positions(first: index)
                } else if byPair[key]?.last != index {
                    byPair[key]?.rest.append(index)
                }
            }
        }
    }

    /// The rows `selection` takes, as the statements would return them (matches in row id
    /// order, asked ids in their order, unknown ones left out), if the cache holds every item
    /// under `current`; nil otherwise, or for a search with native conditions in a keychain
    /// with native items (the statements answer those).
    mutating func rows(_ selection: FreeformSelection, current: Tag) -> [CheckedRow]? {
        settle(current)
        guard let rows else { return nil }
        switch selection {
        case .ids(let ids):
            return ids.compactMap { byUUID[$0].map { rows[$0] } }
        case .matching(let attributes, let native):
            if attributes.isEmpty { return rows }
            if !native.isEmpty, hasNativeItems { return nil }
            if native.isEmpty, let lastSearch, Self.same(attributes, lastSearch.pairs) { return lastSearch.rows }
            var driver: Positions?
            for (name, value) in attributes {
                // A pair no item has: nothing matches, and the other pairs need no look-up.
                guard let items = byPair[Pair(name: name, value: value)] else {
                    driver = nil
                    break
                }
                if driver == nil || items.count < driver!.count { driver = items }
            }
            var found: [CheckedRow] = []
            if let driver {
                if rows[driver.first].hasEveryPair(attributes) { found.append(rows[driver.first]) }
                for index in driver.rest where rows[index].hasEveryPair(attributes) { found.append(rows[index]) }
            }
            if native.isEmpty, attributes.count <= Self.pairsRemembered { lastSearch = (attributes, found) }
            return found
        }
    }

    /// A search of more pairs than this is not remembered (comparing two is quadratic in them).
    static let pairsRemembered = 8

    /// The same pairs, byte for byte. Each of `asked`'s names is distinct, so each matches at
    /// most one of `kept`'s: as many pairs, each found, is the same set.
    private static func same(_ asked: [String: String], _ kept: [String: String]) -> Bool {
        guard asked.count == kept.count else { return false }
        return asked.allSatisfy { pair in kept.contains { $0.key.isExactly(pair.key) && $0.value.isExactly(pair.value) } }
    }
}
