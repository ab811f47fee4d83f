import Foundation
import GRDB
import KeywellProtocol
import KeywellSystem

/// Items: SecItem semantics over the user's keychains (docs/native-api.md "Decided details").
extension KeychainStore {
    /// Adds to `u_Keychain`, else the default keychain. Returns what the `r_*` keys ask for
    /// (`{}` without them). `creator`: the caller's application identity, trusted by the new item
    /// when the dictionary has no `acls` and the keychain enforces access; `creatorUnidentified`:
    /// a caller made it whose identity is unknown, so such an item trusts nobody
    /// (`AccessList.forNewItem`).
    func add(_ attributes: WireDictionary, creator: String? = nil, creatorUnidentified: Bool = false) throws(KeychainError) -> WireDictionary {
        let newItem = try QueryParser.parseAdd(attributes)
        let file = try targetFile(newItem.keychain)
        let (key, integrity) = try file.keys()
        var item = newItem.makeItem(keychain: file.uuid, key: key, now: Date())
        let access = AccessList.forNewItem(creator: creator, explicit: newItem.access, enforceAccess: file.enforcesAccess,
                                           creatorUnidentified: creatorUnidentified)
        let values = ItemTable.attributeAndMatchValues(item)
        let mac = ItemIntegrity.mac(for: item, values: values, freeform: [:], access: access, keychain: file.uuid, key: integrity)
        item.rowID = try file.database.write { db in try ItemTable.insert(item, values: values, access: access, mac: mac, db) }
        file.refreshSessionCopies(of: [item]) { _ in newItem.secret }
        file.markUsed()
        emit(itemChanges: [KeychainItemsEvent(keychain: file.location.displayName, created: [item.uuid])])
        return try result(for: item, in: file, returns: newItem.returns, secret: newItem.secret, access: access)
    }

    /// Adds many items in one transaction per keychain: all of them or, on any error, none.
    /// Items without `acls` trust any application (this is how items come in from elsewhere).
    func addBatch(_ items: [WireDictionary]) throws(KeychainError) {
        // One group per target keychain, however the items name it.
        var files: [KeychainFile] = []
        var groups: [[NewItem]] = []
        var groupByTarget: [String?: Int] = [:]
        for attributes in items {
            let newItem = try QueryParser.parseAdd(attributes)
            if groupByTarget[newItem.keychain] == nil {
                let file = try targetFile(newItem.keychain)
                if let known = files.firstIndex(where: { $0 === file }) {
                    groupByTarget[newItem.keychain] = known
                } else {
                    groupByTarget[newItem.keychain] = files.count
                    files.append(file)
                    groups.append([])
                }
            }
            groups[groupByTarget[newItem.keychain]!].append(newItem)
        }
        guard !files.isEmpty else { return }
        var keys: [(master: SecretBytes, integrity: IntegrityKey)] = []
        for file in files { keys.append(try file.keys()) }
        let now = Date()
        let created: [[KeychainItem]] = try KeychainDatabase.writeTogether(files.map { $0.database }) { dbs in
            try dbs.enumerated().map { index, db in
                let keychain = files[index].uuid
                return try groups[index].map { newItem in
                    let item = newItem.makeItem(keychain: keychain, key: keys[index].master, now: now)
                    let access = newItem.access ?? .anyApplication
                    let mac = ItemIntegrity.mac(for: item, freeform: [:], access: access, keychain: keychain, key: keys[index].integrity)
                    _ = try ItemTable.insert(item, access: access, mac: mac, db)
                    return item
                }
            }
        }
        for (index, file) in files.enumerated() {
            let secrets = Dictionary(uniqueKeysWithValues: zip(created[index].map(\.uuid), groups[index].map(\.secret)))
            file.refreshSessionCopies(of: created[index]) { secrets[$0.uuid] }
        }
        files.forEach { $0.markUsed() }
        emit(itemChanges: zip(files, created).map { KeychainItemsEvent(keychain: $0.location.displayName, created: $1.map(\.uuid)) })
    }

    /// One dictionary per match, in search order. Locked keychains answer attribute and reference
    /// searches; a search for secrets skips them, and fails with `errSecInteractionNotAllowed`
    /// only when they alone held matches. In an unlocked keychain every match is checked against
    /// its integrity MAC first: a tampered item fails the whole search with `errSecDecode`
    /// rather than being listed, or left out unnoticed.
    ///
    /// `screen`: the caller's access control (keywelld's). Items it hides are left out; with
    /// `r_Data`, items it does not trust are asked about, all in one question, before any
    /// secret is opened (`u_AuthUI` says whether asking is allowed).
    func copyMatching(_ query: WireDictionary, screen: (any ItemAccessScreening)? = nil) throws(KeychainError) -> [WireDictionary] {
        try screenedSearch(query, screen: screen).finish()
    }

    /// `copyMatching`'s read and screening, its question and results left to `finish()`.
    func screenedSearch(_ query: WireDictionary, screen: (any ItemAccessScreening)?) throws(KeychainError) -> ScreenedSearch {
        let query = try QueryParser.parseQuery(query, for: .copyMatching)
        // Attributes are no secret: only a caller items may be hidden from needs judging then.
        let screen = query.returns.data || screen?.mayHide == true ? screen : nil
        var found: [FoundItem] = []
        var round = screen.map {
            AccessScreeningRound<ItemToAsk>($0, interaction: query.interaction, untrustedNeedAnswer: query.returns.data)
        }
        var lockedKeychainMatched = false
        // Hidden items must not take the places of visible ones: the limit then applies here.
        let hides = screen?.mayHide ?? false
        let reading = MatchReading(query.returns, judging: screen != nil)
        for file in try files(inScopeOf: query) {
            var remaining = MatchLimit.all
            if case .count(let count) = query.limit {
                guard found.count < count else { break }
                remaining = hides ? .all : .count(count - found.count)
            }
            let key = try? file.masterKey()
            var mismatches = IndexMismatches()
            defer { warnAboutIndex(of: file, mismatches) }
            // Locked with AfterFirstUnlock copies kept: those items answer, the others count as locked.
            let fromSessionCopies = query.returns.data && key == nil && !file.sessionSecrets.isEmpty
            // One of three reads, by the keychain's lock state and whether secrets are asked for.
            let matches: KeychainMatches
            if query.returns.data && key == nil && !fromSessionCopies {
                if try lockedKeychainHasMatch(query.filter, in: file, &mismatches) { lockedKeychainMatched = true }
                continue
            } else if let integrity = file.integrityKeyIfUnlocked {
                matches = try unlockedMatches(query.filter, in: file, integrity: integrity, limit: remaining, reading, &mismatches)
            } else {
                matches = try lockedMatches(query.filter, in: file, limit: remaining, fromSessionCopies: fromSessionCopies, reading,
                                            &mismatches)
            }
            lockedKeychainMatched = lockedKeychainMatched || matches.lockedLeftOut
            file.markUsed()
            var limit = Int.max
            if case .count(let count) = query.limit { limit = count - found.count }
            let items = matches.items
            let kept = round?.admitted(items, of: file, lists: matches.accessLists, limit: limit) ?? Array(items.indices.prefix(limit))
            for index in kept {
                let item = items[index]
                let access = item.rowID.flatMap { matches.accessLists[$0] } ?? .anyApplication
                found.append(FoundItem(file: file, item: item, key: key, access: access,
                                       freeform: reading.freeform ? matches.freeform[index] : nil, fromSessionCopy: fromSessionCopies))
            }
        }
        let returns = query.returns
        return ScreenedSearch(asks: round?.asks ?? false) { [self, round, found, lockedKeychainMatched] () throws(KeychainError) in
            try round?.askOnce(of: self)
            return try replies(to: found, returns: returns, lockedKeychainMatched: lockedKeychainMatched)
        }
    }

    /// `copyMatching`'s answer: one dictionary per item found; none fails as not found, or as
    /// locked when a locked keychain held matches.
    private func replies(
        to found: [FoundItem], returns: ReturnRequest, lockedKeychainMatched: Bool
    ) throws(KeychainError) -> [WireDictionary] {
        var results: [WireDictionary] = []
        results.reserveCapacity(found.count)
        for entry in found {
            // A copy dropped meanwhile leaves no secret: the read then fails as locked.
            let copy = entry.fromSessionCopy ? try entry.file.sessionSecrets.secret(for: entry.item.uuid, keychain: entry.file.uuid) : nil
            var one = try result(for: entry.item, in: entry.file, returns: returns, key: entry.key, secret: copy, access: entry.access)
            if let rows = entry.freeform { Self.addSecretServiceAttributes(rows, to: &one) }
            results.append(one)
        }
        guard !results.isEmpty else {
            if lockedKeychainMatched {
                throw KeychainError(SecStatus.interactionNotAllowed, detail: "only locked keychains hold matching items")
            }
            throw KeychainError(SecStatus.itemNotFound)
        }
        return results
    }

    /// Changes every match in scope, whatever `m_Limit` says; all or nothing. `screen`: as in
    /// `copyMatching`; every item not trusted is asked about first, and only items that were
    /// judged are changed.
    func update(
        _ query: WireDictionary, _ attributesToUpdate: WireDictionary, screen: (any ItemAccessScreening)? = nil
    ) throws(KeychainError) {
        let query = try QueryParser.parseQuery(query, for: .update)
        let changes = try QueryParser.parseChanges(attributesToUpdate, itemClass: query.filter.itemClass)
        let now = Date()
        let judged = try screen.map { screen throws(KeychainError) in try screenedMatches(of: query, screen) }
        var changed: [(file: KeychainFile, items: [KeychainItem])] = []
        try changeMatches(of: query, only: judged, reportedAs: \.changed) { file, items, db throws(KeychainError) in
            changed.append((file, []))
            let (key, integrity) = try file.keys()
            // A change must not vouch for an edit made on disk.
            try ItemIntegrity.check(items, keychain: file.uuid, key: integrity, path: file.location.path, db)
            for item in items {
                let updated = try changes.apply(to: item, keychain: file.uuid, key: key, now: now)
                changed[changed.count - 1].items.append(updated)
                try KeychainError.rethrowing(path: file.location.path) {
                    try ItemTable.update(updated, db)
                    if let access = changes.access { try ItemAccessColumn.set(access, rowID: item.rowID!, db) }
                    try ItemIntegrity.renew(rowID: item.rowID!, keychain: file.uuid, key: integrity, db)
                }
            }
        }
        // Only once committed: a rolled-back change must not reach the copies.
        for (file, items) in changed { file.refreshSessionCopies(of: items) { _ in changes.secret } }
    }

    /// Deletes every match in scope, whatever `m_Limit` says; all or nothing. Matches are not
    /// checked against their MACs: deleting a tampered item is how one gets rid of it, and
    /// whoever can edit the file can delete rows anyway. `screen`: as in `update`.
    func delete(_ query: WireDictionary, screen: (any ItemAccessScreening)? = nil) throws(KeychainError) {
        let query = try QueryParser.parseQuery(query, for: .delete)
        let judged = try screen.map { screen throws(KeychainError) in try screenedMatches(of: query, screen) }
        var deleted: [(file: KeychainFile, items: [UUID])] = []
        try changeMatches(of: query, only: judged, reportedAs: \.deleted) { file, items, db throws(KeychainError) in
            for item in items {
                try KeychainError.rethrowing(path: file.location.path) { try ItemTable.delete(rowID: item.rowID!, db) }
            }
            deleted.append((file, items.map(\.uuid)))
        }
        for (file, items) in deleted { file.sessionSecrets.remove(items) }
    }

    // MARK: Helpers

    /// `r_SSAttributes`: the free-form rows, the hidden ones under keys of their own (their
    /// names start with NUL, which no D-Bus string may hold).
    static func addSecretServiceAttributes(_ rows: [String: String], to result: inout WireDictionary) {
        var pairs: [String] = []
        for (name, value) in rows.sorted(by: { $0.key < $1.key }) where !FreeformItem.hiddenRows.contains(name) {
            pairs += [name, value]
        }
        result[WireKey.secretServiceAttributes] = .strings(pairs)
        if let contentType = rows[FreeformItem.contentTypeRow] {
            result[WireKey.secretServiceContentType] = .string(contentType)
        }
        if let type = rows[FreeformItem.typeRow] { result[WireKey.secretServiceType] = .string(type) }
    }

    /// Finds every match in every keychain in scope inside one write transaction each, refuses
    /// if a locked keychain holds one, then lets `change` act on each keychain's matches.
    /// `only`: the items access control judged (`screenedMatches`); a match outside it (one that
    /// began to match since) is left alone. `reportedAs`: the list of the keychain's
    /// `KeychainItemsEvent` the matched items go into (changed or deleted).
    private func changeMatches(
        of query: ItemQuery,
        only judged: Set<UUID>? = nil,
        reportedAs report: WritableKeyPath<KeychainItemsEvent, [UUID]>,
        _ change: (KeychainFile, [KeychainItem], Database) throws(KeychainError) -> Void
    ) throws(KeychainError) {
        let files = try files(inScopeOf: query)
        let changed: [(KeychainFile, [KeychainItem])] = try KeychainDatabase.writeTogether(files.map { $0.database }) { dbs in
            var mismatches = Array(repeating: IndexMismatches(), count: files.count)
            defer { for (file, found) in zip(files, mismatches) { warnAboutIndex(of: file, found) } }
            let matches = try dbs.enumerated().map { index, db in
                let all = try ItemTable.fetch(query.filter, limit: .all, db) { mismatches[index].add($0) }
                guard let judged else { return all }
                return all.filter { judged.contains($0.uuid) }
            }
            guard matches.contains(where: { !$0.isEmpty }) else { throw KeychainError(SecStatus.itemNotFound) }
            if let locked = zip(files, matches).first(where: { $0.0.isLocked && !$0.1.isEmpty })?.0 {
                throw KeychainError(SecStatus.interactionNotAllowed, detail: "keychain \(locked.location.displayName) is locked")
            }
            for (index, db) in dbs.enumerated() where !matches[index].isEmpty {
                try change(files[index], matches[index], db)
            }
            return zip(files, matches).filter { !$0.1.isEmpty }
        }
        files.forEach { $0.markUsed() }
        emit(itemChanges: changed.map { file, items in
            var event = KeychainItemsEvent(keychain: file.location.displayName)
            event[keyPath: report] = items.map(\.uuid)
            return event
        })
    }

    /// `u_Keychain` (which must exist), else `m_SearchList` or the search list, without missing
    /// keychains. A query by persistent reference looks in the keychain the reference names.
    func files(inScopeOf query: ItemQuery) throws(KeychainError) -> [KeychainFile] {
        var locations: [KeychainLocation] = []
        switch query.scope {
        case .keychain(let name):
            locations = [try location(name)]
            _ = try file(at: locations[0])
        case .list(let names):
            for name in names { locations.append(try location(name)) }
        case .searchList where query.persistentRef != nil:
            for name in try listKeychains() { locations.append(try location(name)) }
        case .searchList:
            // Entries that are not names or paths (a hand-edited file) name no keychain.
            locations = try userSettings.read().settings.searchList.compactMap { try? location($0) }
        }
        var files: [KeychainFile] = []
        for location in locations {
            if let file = try existingFile(at: location) { files.append(file) }
        }
        if let reference = query.persistentRef {
            files = files.filter { $0.uuid == reference.keychain }
        }
        var seen = Set<ExactText>()
        return files.filter { seen.insert($0.location.key).inserted }
    }

    private func targetFile(_ keychain: String?) throws(KeychainError) -> KeychainFile {
        if let keychain { return try file(at: location(keychain)) }
        guard let location = try defaultLocation() else { throw KeychainError(SecStatus.noDefaultKeychain) }
        return try file(at: location)
    }

    /// The result dictionary for one item: what `returns` asks for.
    func result(
        for item: KeychainItem, in file: KeychainFile, returns: ReturnRequest, key: SecretBytes? = nil, secret: Data? = nil,
        access: AccessList = .anyApplication
    ) throws(KeychainError) -> WireDictionary {
        var result: WireDictionary = returns.attributes ? item.wireAttributes : [:]
        if returns.access { result[WireKey.access] = access.wireValue }
        if returns.data {
            if let secret {
                result[WireKey.valueData] = .data(secret)
            } else {
                let openingKey: SecretBytes
                if let key { openingKey = key } else { openingKey = try file.masterKey() }
                result[WireKey.valueData] = .data(try ItemSealing.open(item, keychain: file.uuid, key: openingKey))
            }
        }
        if returns.persistentRef {
            result[WireKey.valuePersistentRef] = .data(PersistentRef(keychain: file.uuid, item: item.uuid).data)
        }
        if returns.keychain { result[WireKey.useKeychain] = .string(file.location.displayName) }
        return result
    }
}

/// A search read and screened (`KeychainStore.Items.screenedSearch`): what it found, each
/// match judged, and the one question about the untrusted ones not asked yet.
public struct ScreenedSearch {
    /// Whether `finish()` asks the person first (and may wait minutes for the answer).
    public let asks: Bool
    private let rest: () throws(KeychainError) -> [WireDictionary]

    init(asks: Bool, rest: @escaping () throws(KeychainError) -> [WireDictionary]) {
        self.asks = asks
        self.rest = rest
    }

    /// Asks the question, if one is left, then returns the results of what was read (their
    /// secrets opened now, after the answer), as `copyMatching` does.
    public func finish() throws(KeychainError) -> [WireDictionary] { try rest() }
}
