import Foundation
import GRDB
import KeywellProtocol

/// Access control's side in the engine (docs/access-control.md): screening the items a native
/// call matched, and writing Always Allow into the files.
extension KeychainStore {
    /// Items one `trust` call may name: a whole large keychain; linear work, one transaction.
    static let maxItemsTrustedAtOnce = 100_000

    /// Adds `identity` to the access list of each item `references` names (`v_PersistentRef`
    /// bytes), as Always Allow does: all in one transaction per keychain, each MAC renewed, one
    /// change event per keychain. An item open to any application, or already naming the
    /// identity, is left as it is. A list that would grow over `AccessList.maxApplications`,
    /// a reference that names no item, a locked keychain: an error, and nothing is written.
    func trust(_ identity: String, items references: [[UInt8]]) throws(KeychainError) {
        guard references.count <= Self.maxItemsTrustedAtOnce else {
            throw .param("at most \(Self.maxItemsTrustedAtOnce) items can be trusted at once")
        }
        _ = try AccessList.validated([identity])
        var byKeychain: [UUID: [UUID]] = [:]
        for bytes in references {
            let reference = try PersistentRef(parsing: Data(bytes))
            byKeychain[reference.keychain, default: []].append(reference.item)
        }
        guard !byKeychain.isEmpty else { return }
        var files: [KeychainFile] = []
        for name in try listKeychains() {
            if let file = try existingFile(at: location(name)), byKeychain[file.uuid] != nil,
               !files.contains(where: { $0.uuid == file.uuid }) {
                files.append(file)
            }
        }
        guard files.count == byKeychain.count else { throw KeychainError(SecStatus.itemNotFound, detail: "a trusted item's keychain is gone") }
        let keys = try files.map { file throws(KeychainError) in try file.keys().integrity }
        let changed: [[UUID]] = try KeychainDatabase.writeTogether(files.map { $0.database }) { dbs in
            try dbs.enumerated().map { index, db in
                let file = files[index]
                var changed: [UUID] = []
                for item in byKeychain[file.uuid]! {
                    guard let rowID = try Self.rowID(of: item, db) else {
                        throw KeychainError(SecStatus.itemNotFound, detail: "item \(item.uuidString) is gone")
                    }
                    // Renewing must not vouch for an edit made on disk: the list read is the one checked.
                    let lists = try ItemIntegrity.check(rowIDs: [rowID], keychain: file.uuid, key: keys[index], db)
                    guard case .applications(let identities)? = lists[rowID] ?? .anyApplication, !identities.contains(identity) else {
                        continue
                    }
                    try ItemAccessColumn.set(AccessList.validated(identities + [identity]), rowID: rowID, db)
                    try ItemIntegrity.renew(rowID: rowID, keychain: file.uuid, key: keys[index], db)
                    changed.append(item)
                }
                return changed
            }
        }
        files.forEach { $0.markUsed() }
        emit(itemChanges: zip(files, changed).filter { !$0.1.isEmpty }.map {
            KeychainItemsEvent(keychain: $0.location.displayName, changed: $1)
        })
    }

    /// Whether the item `reference` names (`v_PersistentRef` bytes) still has `identity` on its
    /// list, exactly: what `keywell doctor` says of each grant Always Allow made. False for an
    /// item or keychain that is gone, an unreadable reference, or a list open to any application.
    func stillTrusts(_ identity: String, reference: [UInt8]) -> Bool {
        guard let parsed = try? PersistentRef(parsing: Data(reference)), let names = try? listKeychains() else { return false }
        for name in names {
            guard let file = try? existingFile(at: location(name)), file.uuid == parsed.keychain else { continue }
            guard let lists = try? accessLists([parsed.item], in: name),
                  case .applications(let identities) = lists.list(of: parsed.item) else { return false }
            return identities.contains(identity)
        }
        return false
    }

    // MARK: Screening (the native API's calls)

    /// One match of a search, kept until access control has judged all of them.
    struct FoundItem {
        let file: KeychainFile
        let item: KeychainItem
        let key: SecretBytes?
        let access: AccessList
        let freeform: [String: String]?
        /// Locked, read from the AfterFirstUnlock copy (`SessionSecrets`), not with the master key.
        var fromSessionCopy = false
    }

    /// The `v_PersistentRef` bytes of an item: how access questions and Always Allow name it.
    static func reference(to item: KeychainItem, in file: KeychainFile) -> [UInt8] {
        Array(PersistentRef(keychain: file.uuid, item: item.uuid).data)
    }

    /// Update's and Delete's first step: every match in scope judged by `screen`, the untrusted
    /// ones asked about in one question. Returns the matches the call may change (hidden and
    /// skipped ones left out); it changes only those, so an item that begins to match while the
    /// person answers is never changed unasked. Items of locked keychains are not asked about
    /// (the change refuses them anyway).
    func screenedMatches(of query: ItemQuery, _ screen: any ItemAccessScreening) throws(KeychainError) -> Set<UUID> {
        var judged = Set<UUID>()
        var round = AccessScreeningRound<ItemToAsk>(screen, interaction: query.interaction)
        for file in try files(inScopeOf: query) {
            let (items, lists) = try file.database.read { db in
                let items = try ItemTable.fetch(query.filter, limit: .all, columns: .keyAndSecret, db) { _ in }
                return (items, try ItemAccessColumn.read(rowIDs: items.compactMap(\.rowID), db))
            }
            for index in round.admitted(items, of: file, lists: lists, asking: !file.isLocked) { judged.insert(items[index].uuid) }
        }
        try round.askOnce(of: self)
        return judged
    }

    /// The items with their labels, read for the question (one statement per 64 per keychain).
    func labelled(_ entries: [ItemToAsk]) throws(KeychainError) -> [AccessItem] {
        var labels: [ObjectIdentifier: [Int64: String]] = [:]
        var byFile: [ObjectIdentifier: (KeychainFile, [Int64])] = [:]
        for entry in entries { byFile[ObjectIdentifier(entry.file), default: (entry.file, [])].1.append(entry.rowID) }
        for (id, (file, rowIDs)) in byFile {
            labels[id] = try file.database.read { db in try Self.labels(rowIDs: rowIDs, db) }
        }
        return entries.map { entry in
            entry.item.labelled(labels[ObjectIdentifier(entry.file)]?[entry.rowID] ?? "")
        }
    }

    private static let labelColumn = "\"\(ItemAttribute.label.name)\""

    private static func labels(rowIDs: [Int64], _ db: Database) throws -> [Int64: String] {
        var result: [Int64: String] = [:]
        try ChunkedLookup.forEachRow(of: rowIDs.map(\.databaseValue), db, selectIn: "SELECT id, \(labelColumn) FROM item WHERE id IN") { rows in
            if !rows.isNull(1) { result[rows.integer(0)] = rows.text(1) }
        }
        return result
    }

    private static func rowID(of item: UUID, _ db: Database) throws -> Int64? {
        let rows = try RawStatement(db, sql: "SELECT id FROM item WHERE uuid = ?", values: [item.data.databaseValue])
        defer { rows.finish() }
        return try rows.step() ? rows.integer(0) : nil
    }
}
