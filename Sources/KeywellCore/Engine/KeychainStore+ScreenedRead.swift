import Foundation
import GRDB
import KeywellProtocol
import KeywellSystem

/// Which items a screened read takes (`KeychainStore.screenedRead`).
public enum FreeformSelection {
    /// Items whose free-form rows include every pair (exact match), and items not made from
    /// free-form attributes whose own columns meet `native` (`freeformMatches`); all items for
    /// no pairs.
    case matching([String: String], native: KeychainStore.NativeConditions)
    /// These items, in this order; unknown ones are left out.
    case ids([UUID])
}

/// One item a screened read found: the caller's verdict on it and, when asked for and allowed,
/// its secret.
public struct ScreenedItem {
    public let id: UUID
    public let verdict: AccessVerdict
    /// Only for an allowed item of an unlocked keychain, when the read asked for secrets.
    public let secret: ItemSecret?
    private let freeform: [(name: [UInt8], value: [UInt8])]

    init(id: UUID, verdict: AccessVerdict, secret: ItemSecret?, freeform: [(name: [UInt8], value: [UInt8])]) {
        self.id = id
        self.verdict = verdict
        self.secret = secret
        self.freeform = freeform
    }

    /// For a face that keeps items of its own (the Secret Service's `session` collection).
    public init(id: UUID, verdict: AccessVerdict, secret: ItemSecret?, attributes: [String: String]) {
        self.init(id: id, verdict: verdict, secret: secret, freeform: attributes.map { (Array($0.key.utf8), Array($0.value.utf8)) })
    }

    /// One of the item's free-form rows, by name (unlocked reads only: a locked read returns none).
    public func freeformValue(_ name: String) -> String? {
        // Compared in place: no copy of the name per row asked (every read asks).
        let wanted = name.utf8
        return freeform.first { $0.name.elementsEqual(wanted) }.map { String(decoding: $0.value, as: UTF8.self) }
    }
}

/// What a screened read returns: the items in the order found (matches oldest first, or the
/// order of the ids asked), hidden ones included with their verdict, and whether the keychain
/// was locked.
public struct ScreenedRead {
    public let locked: Bool
    public let items: [ScreenedItem]

    public init(locked: Bool, items: [ScreenedItem]) {
        self.locked = locked
        self.items = items
    }
}

extension KeychainStore {
    /// The read every face's hot path makes (docs/performance.md, "One read per call"): the
    /// items of `selection`, each with its access list and (`secrets`) its sealed secret, from
    /// one statement per 64 items in one transaction, every MAC checked (which vouches for the
    /// list too) before any verdict is given; then `screen`'s verdict per item (nil: every item
    /// allowed), computed once per distinct list the read met when the list alone decides; then
    /// the secrets of the allowed items opened, and no others.
    ///
    /// Locked, the matches and their lists are read unchecked and no secret is returned
    /// (`locked` true); a face that needs one answers as a locked keychain does. Searches report
    /// index mismatches as `freeformMatches` does; a tampered item fails the read (`errSecDecode`).
    func screenedRead(
        _ selection: FreeformSelection, in keychain: String, screen: (any ItemAccessScreening)?, secrets: Bool
    ) throws(KeychainError) -> ScreenedRead {
        let file = try file(at: location(keychain))
        // One take of the lock for both keys (this runs before every KWallet read).
        guard let (integrity, unlock, master) = file.readKeys(master: secrets) else {
            return try lockedRead(selection, file: file, keychain: keychain, screen: screen)
        }
        if secrets && master == nil {
            throw KeychainError(SecStatus.interactionNotAllowed, detail: "keychain \(file.location.displayName) is locked")
        }
        // The count of writes is read before anything else: rows kept under it are then never
        // older than a write this process finished (docs/file-format.md, "Checked rows kept between reads").
        let writes = file.database.writeCount
        let current = CheckedRowCache.Tag(dataVersion: try file.database.dataVersion(), writes: writes)
        var rows: [CheckedRow]
        var marked = false
        switch file.checkedRows(selection, current: current, markingUse: secrets) {
        case .rows(let kept):
            rows = kept
            marked = secrets
        case .statements:
            rows = try checkedRead(selection, file: file, integrity: integrity, secrets: secrets)
            file.spentOnStatements(rows.count, under: current)
        case .load:
            let (loaded, tag) = try loadEveryItem(file, integrity: integrity, writes: current.writes)
            file.loadCheckedRows(loaded, loaded: tag, current: current, unlock: unlock)
            if case .rows(let kept) = file.checkedRows(selection, current: current) {
                rows = kept
            } else {
                rows = try checkedRead(selection, file: file, integrity: integrity, secrets: secrets)
            }
        }
        if secrets && !marked { file.markUsed() }
        var judge = VerdictsOfRead(screen: screen, keychainPath: file.location.path, keychainUUID: file.uuid)
        if let master, rows.count >= TwoHalves.minimumItems {
            return try Self.openedInHalves(rows, judge: &judge, master: master)
        }
        var items: [ScreenedItem] = []
        items.reserveCapacity(rows.count)
        for row in rows {
            let (verdict, secret) = try row.screened(&judge, master: master)
            items.append(ScreenedItem(id: row.uuid, verdict: verdict, secret: secret, freeform: row.freeform))
        }
        return ScreenedRead(locked: false, items: items)
    }

    /// What the loop above returns for many rows, the secrets opened on two threads
    /// (`TwoHalves`; docs/performance.md, "GetSecrets of many items"): the verdicts first, on
    /// this thread (the judge's state is the read's), then the allowed rows' secrets, each half
    /// into its own places. It fails as the loop would: at the first row, in order, whose
    /// verdict or opening fails, every secret opened so far wiped.
    private static func openedInHalves(_ rows: [CheckedRow], judge: inout VerdictsOfRead,
                                       master: SecretBytes) throws(KeychainError) -> ScreenedRead {
        var verdicts: [AccessVerdict] = []
        verdicts.reserveCapacity(rows.count)
        var verdictFailure: KeychainError?
        for row in rows {
            do throws(KeychainError) {
                verdicts.append(try row.verdict(&judge))
            } catch {
                verdictFailure = error
                break
            }
        }
        let judged = verdicts.count
        var secrets = [ItemSecret?](repeating: nil, count: judged)
        // The first failing row of each half, by index.
        var failures: [(index: Int, error: KeychainError)?] = [nil, nil]
        secrets.withUnsafeMutableBufferPointer { secrets in
            failures.withUnsafeMutableBufferPointer { failures in
                TwoHalves.forEachHalf(count: judged) { range in
                    for index in range where verdicts[index] == .allowed {
                        do throws(KeychainError) {
                            secrets[index] = try rows[index].opened(master)
                        } catch {
                            failures[range.lowerBound == 0 ? 0 : 1] = (index, error)
                            return
                        }
                    }
                }
            }
        }
        if let failure = failures[0] ?? failures[1] ?? verdictFailure.map({ (judged, $0) }) {
            for secret in secrets { if let secret { SecretWipe.wipe(secret.value) } }
            throw failure.error
        }
        var items: [ScreenedItem] = []
        items.reserveCapacity(rows.count)
        for index in rows.indices {
            items.append(ScreenedItem(id: rows[index].uuid, verdict: verdicts[index], secret: secrets[index], freeform: rows[index].freeform))
        }
        return ScreenedRead(locked: false, items: items)
    }

    /// The statements' read of `selection`: one snapshot, every MAC checked (a tampered row
    /// fails the read), index mismatches reported.
    private func checkedRead(
        _ selection: FreeformSelection, file: KeychainFile, integrity: IntegrityKey, secrets: Bool
    ) throws(KeychainError) -> [CheckedRow] {
        var mismatches = IndexMismatches()
        defer { warnAboutIndex(of: file, mismatches) }
        let purpose: ItemIntegrity.Purpose = secrets ? .checkWithSecret : .check
        // `.ids` reads by uuid, which always takes the secret column.
        let takesSealed: Bool
        if case .ids = selection { takesSealed = true } else { takesSealed = secrets }
        let extra = { (rows: RawStatement) throws -> SealedSecret? in
            takesSealed ? try SecretBatchRows.sealedSecret(rows, keychain: file.uuid) : nil
        }
        let rows: [ItemIntegrity.Row<SealedSecret?>] = try file.database.snapshot { db in
            switch selection {
            case .matching(let attributes, let native):
                let matches = try Self.freeformMatchRows(attributes, native: native, db)
                return try FreeformSearchCheck.verifiedRows(
                    matches, query: attributes, native: attributes.isEmpty ? [:] : native, keychain: file.uuid,
                    integrity: integrity, purpose: purpose, db, onIndexMismatch: { mismatches.add($0) }, extra: extra)
            case .ids(let ids):
                var rows: [ItemIntegrity.Row<SealedSecret?>] = []
                rows.reserveCapacity(ids.count)
                var start = ids.startIndex
                while start < ids.endIndex {
                    let part = ids[start..<min(ids.endIndex, start + ItemIntegrity.chunk)]
                    start = part.endIndex
                    rows += try ItemIntegrity.read(.secrets, part.map { $0.data.databaseValue },
                                                   keychain: file.uuid, db, extra: extra)
                }
                return Self.inOrder(rows, of: ids)
            }
        }
        for row in rows { try row.check(integrity) }
        return rows.compactMap { row in
            row.uuid.map { CheckedRow(rowID: row.rowID, uuid: $0, access: row.access, freeform: row.freeform,
                                      sealed: row.extra ?? SealedSecret(associatedData: Data(), sealed: Data()), isNative: false) }
        }
    }

    /// Every item of the keychain, checked, in row id order, with the tag of the snapshot it
    /// came from (`writes` taken before it began); nil rows when the keychain is over the caps
    /// or anything fails (a tampered row, a damaged one): the statements then answer each read,
    /// and report the failure, as they always did.
    private func loadEveryItem(
        _ file: KeychainFile, integrity: IntegrityKey, writes: UInt64
    ) throws(KeychainError) -> ([CheckedRow]?, CheckedRowCache.Tag) {
        var dataVersion: Int64 = -1
        let groupColumn = ItemIntegrity.firstCoveredColumn + 2 + Int32(ItemAttribute.accessGroup.rawValue)
        let rows: [ItemIntegrity.Row<(SealedSecret, Bool)>]? = try? file.database.snapshot { db in
            dataVersion = try KeychainDatabase.dataVersion(db)
            let ids = try RawStatement(db, sql: "SELECT id FROM item ORDER BY id LIMIT ?", values: [(CheckedRowCache.itemCap + 1).databaseValue])
            var all: [DatabaseValue] = []
            while try ids.step() { all.append(ids.integer(0).databaseValue) }
            guard all.count <= CheckedRowCache.itemCap else { return nil }
            var rows: [ItemIntegrity.Row<(SealedSecret, Bool)>] = []
            rows.reserveCapacity(all.count)
            for start in stride(from: 0, to: all.count, by: ItemIntegrity.chunk) {
                rows += try ItemIntegrity.read(.checkWithSecret, Array(all[start..<min(all.count, start + ItemIntegrity.chunk)]),
                                               keychain: file.uuid, db) { row in
                    let native = row.isNull(groupColumn) || !FreeformItem.isFreeform(accessGroup: row.text(groupColumn))
                    return (try SecretBatchRows.sealedSecret(row, keychain: file.uuid), native)
                }
            }
            return rows
        } ?? nil
        let tag = CheckedRowCache.Tag(dataVersion: dataVersion, writes: writes)
        guard let rows else { return (nil, tag) }
        var checked: [CheckedRow] = []
        checked.reserveCapacity(rows.count)
        // Items of one list (an application's own) share one copy of its text, once each row's
        // MAC vouched for its own: a read then finds the text warm in memory, and the list last
        // found trusting the caller is the same storage, compared without reading its bytes
        // (`TrustingLists`; docs/performance.md, "Reads with fewer steps"). At most one entry
        // per row kept.
        var lists: [ExactText: String] = [:]
        for row in rows {
            guard let uuid = row.uuid, (try? row.check(integrity)) != nil else { return (nil, tag) }
            var access = row.access
            if case .text(let text) = access {
                if let shared = lists[ExactText(text)] { access = .text(shared) } else { lists[ExactText(text)] = text }
            }
            checked.append(CheckedRow(rowID: row.rowID, uuid: uuid, access: access, freeform: row.freeform,
                                      sealed: row.extra.0, isNative: row.extra.1))
        }
        checked.sort { $0.rowID < $1.rowID }
        return (checked, tag)
    }

    /// Locked: the matches (unchecked: nothing can check them) and their lists, no secrets.
    private func lockedRead(
        _ selection: FreeformSelection, file: KeychainFile, keychain: String, screen: (any ItemAccessScreening)?
    ) throws(KeychainError) -> ScreenedRead {
        let ids: [UUID]
        switch selection {
        case .matching(let attributes, let native): ids = try freeformMatches(attributes, native: native, in: keychain).ids
        case .ids(let asked):
            // One statement per 64 ids: a locked GetSecrets of thousands must stay linear and cheap.
            var present = Set<UUID>()
            try file.database.read { db in
                try ChunkedLookup.forEachRow(of: asked.map(\.data.databaseValue), db, selectIn: "SELECT uuid FROM item WHERE uuid IN") { rows in
                    if let uuid = rows.uuid(0) { present.insert(uuid) }
                }
            }
            ids = asked.filter { present.remove($0) != nil }
        }
        let lists = try accessLists(ids, in: keychain)
        var judge = VerdictsOfRead(screen: screen, keychainPath: lists.keychainPath, keychainUUID: file.uuid)
        let items = ids.map { id in ScreenedItem(id: id, verdict: judge.verdict(lists.list(of: id), item: id), secret: nil, freeform: []) }
        return ScreenedRead(locked: true, items: items)
    }

    /// Every item for no pairs (read from the table, no index), else the index's matches.
    static func freeformMatchRows(_ attributes: [String: String], native: NativeConditions, _ db: Database) throws -> [FreeformAttributeTable.Match] {
        guard !attributes.isEmpty else {
            let rows = try RawStatement(db, sql: "SELECT id, uuid FROM item ORDER BY id", values: [])
            var all: [FreeformAttributeTable.Match] = []
            while try rows.step() {
                if let uuid = rows.uuid(1) { all.append((rows.integer(0), uuid)) }
            }
            return all
        }
        return try FreeformAttributeTable.matchingItems(attributes, db, including: nativeBranches(native))
    }

    /// `rows` in the order of `ids` (SQLite returns an IN list's rows in its own order).
    private static func inOrder<Extra>(_ rows: [ItemIntegrity.Row<Extra>], of ids: [UUID]) -> [ItemIntegrity.Row<Extra>] {
        guard rows.count > 1 else { return rows }
        var byID: [UUID: Int] = [:]
        byID.reserveCapacity(rows.count)
        for (index, row) in rows.enumerated() { if let uuid = row.uuid { byID[uuid] = index } }
        return ids.compactMap { byID.removeValue(forKey: $0).map { rows[$0] } }
    }
}

/// A read's verdicts: each distinct list text is split once, and its verdict kept for the rest
/// of the read when the list alone decided it (it trusts the caller, or hides the item from a
/// sandboxed one). A verdict that depends on the item (an *Allow* the person gave for it) is
/// asked for item by item. Kept only for the one read, so no list change or lock can outlive it.
struct VerdictsOfRead {
    let screen: (any ItemAccessScreening)?
    let keychainPath: String
    let keychainUUID: UUID
    /// Keyed byte for byte: a list naming a program in other bytes is another list.
    private var lists: [ExactText: AccessList] = [:]
    private var decided: [ExactText: AccessVerdict] = [:]
    private var anyApplication: AccessVerdict?
    private var lastDecided: (text: String, verdict: AccessVerdict)?

    init(screen: (any ItemAccessScreening)?, keychainPath: String, keychainUUID: UUID) {
        self.screen = screen
        self.keychainPath = keychainPath
        self.keychainUUID = keychainUUID
    }

    /// From the stored column, once its MAC is checked (the MAC vouches that Keywell wrote and
    /// validated the text).
    mutating func verdict(_ stored: ItemIntegrity.StoredAccess, item: UUID, rowID: Int64) throws(KeychainError) -> AccessVerdict {
        guard screen != nil else { return .allowed }
        switch stored {
        case .anyApplication:
            if let known = anyApplication { return known }
            var byList = true
            let verdict = judge(.anyApplication, item: item, byList: &byList)
            if byList { anyApplication = verdict }
            return verdict
        case .text(let text):
            // Most items of a read share their creator's list: one comparison, no hashing.
            if let last = lastDecided, last.text.isExactly(text) { return last.verdict }
            if let known = decided[ExactText(text)] {
                lastDecided = (text, known)
                return known
            }
            // Found to trust this caller by an earlier read: no split, no comparison. Kept as
            // the last text only: the table of this read's texts is for lists judged here, and
            // filling it was a new table and a second hash of the text on every one-item read.
            let trusting = screen?.trustingLists
            if let trusting, trusting.contains(text) {
                lastDecided = (text, .allowed)
                return .allowed
            }
            let list = lists[ExactText(text)] ?? .applications(ItemAccessColumn.identities(in: text))
            lists[ExactText(text)] = list
            var byList = true
            let verdict = judge(list, item: item, byList: &byList)
            if byList {
                decided[ExactText(text)] = verdict
                lastDecided = (text, verdict)
                if verdict == .allowed { trusting?.insert(text) }
            }
            return verdict
        case .notText:
            throw KeychainError(SecStatus.invalidKeychain, detail: "item row \(rowID) has a damaged access list")
        }
    }

    /// For a list already read (locked reads): not kept, a locked read is the rare one.
    mutating func verdict(_ list: AccessList, item: UUID) -> AccessVerdict {
        guard screen != nil else { return .allowed }
        var byList = true
        return judge(list, item: item, byList: &byList)
    }

    private func judge(_ list: AccessList, item: UUID, byList: inout Bool) -> AccessVerdict {
        guard let screen else { return .allowed }
        let keychainPath = keychainPath, keychainUUID = keychainUUID
        var askedForItem = false
        let verdict = screen.verdict(list) {
            askedForItem = true
            return AccessItem(keychain: keychainPath, reference: Array(PersistentRef(keychain: keychainUUID, item: item).data), label: "")
                .trusting(list)
        }
        byList = !askedForItem
        return verdict
    }
}
