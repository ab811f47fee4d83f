import Foundation
import KeywellCore
import KeywellProtocol
import Logging

/// Sync of one keychain with its folder (docs/sync.md): enable, join, writing local changes,
/// merging arrivals, compaction, status and conflicts. Synchronous: the daemon's `SyncService`
/// calls it from its one sync thread, so two calls never overlap.
public final class SyncEngine: @unchecked Sendable {
    let store: KeychainStore
    let logger: Logger
    public let hostName: String
    /// Files merged already, by name and size, left unread by later scans (memory only: a
    /// restart reads each once more, and merging a version held changes nothing).
    private var merged: [String: Set<String>] = [:]

    public init(store: KeychainStore, logger: Logger, hostName: String = SyncEngine.currentHostName()) {
        self.store = store
        self.logger = logger
        self.hostName = String(SyncSettings.printable(hostName).utf8.prefix(SyncLimits.bytesPerMachineName)) ?? "?"
    }

    public static func currentHostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "unknown" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public func settings(_ keychain: String) throws(KeychainError) -> SyncSettings? {
        SyncSettings(try store.transfer.syncSettings(keychain))
    }

    // MARK: Enable, join, disable, rekey

    /// `sync enable`: a new sync key in a folder that holds no mirror yet, then every item out.
    public func enable(_ keychain: String, folder path: String, password: SecretBytes, kdf: KDFParameters) throws(KeychainError) {
        let folder = try prepare(keychain, path)
        guard (try? folder.read(RecordName.headerFileName, limit: SyncLimits.bytesPerHeader)) == nil else {
            throw KeychainError(SecStatus.duplicateItem, detail: "\(path) already holds a keychain's mirror: use `keywell sync join`")
        }
        let key = SyncKey.random()
        let header = try SyncHeader.wrap(key, password: password, kdf: kdf)
        let settings = SyncSettings(folder: path, machine: MachineID.random(), sealedKey: try store.transfer.sealForSync(keychain, key.key))
        try folder.write(header, as: RecordName.headerFileName)
        try start(keychain, settings)
        _ = try push(keychain)
    }

    /// `sync join`: the folder's key from the password (a wrong one changes nothing), what the
    /// folder holds merged in, then the items it lacks written out.
    public func join(_ keychain: String, folder path: String, password: SecretBytes) throws(KeychainError) {
        let folder = try prepare(keychain, path)
        let read: [UInt8]?
        do throws(SyncRefusal) {
            read = try folder.read(RecordName.headerFileName, limit: SyncLimits.bytesPerHeader)
        } catch {
            throw KeychainError(SecStatus.decode, detail: "the sync folder's header: \(error.reason)")
        }
        guard let header = read else {
            throw KeychainError(SecStatus.noSuchKeychain, detail: "\(path) holds no keychain's mirror: use `keywell sync enable`")
        }
        let key = try SyncHeader.unwrap(header, password: password)
        let settings = SyncSettings(folder: path, machine: MachineID.random(), sealedKey: try store.transfer.sealForSync(keychain, key.key))
        try start(keychain, settings)
        _ = try merge(keychain)
        _ = try push(keychain)
    }

    /// `sync disable`: the keychain stops mirroring; the folder and every item stay as they are.
    public func disable(_ keychain: String) throws(KeychainError) {
        guard try settings(keychain) != nil else { throw KeychainError(SecStatus.param, detail: "sync is not enabled on this keychain") }
        try store.transfer.clearSyncState(keychain)
        merged[keychain] = nil
    }

    /// `sync rekey`: a new sync key under a new password, and this machine's items written
    /// anew under it as one snapshot. Other machines join again with the new password; a lost
    /// machine's copy of the old key opens nothing written since.
    public func rekey(_ keychain: String, password: SecretBytes, kdf: KDFParameters) throws(KeychainError) {
        guard var settings = try settings(keychain) else { throw KeychainError(SecStatus.param, detail: "sync is not enabled on this keychain") }
        let folder = SyncFolder(path: settings.folder)
        try folder.check()
        let key = SyncKey.random()
        settings.sealedKey = try store.transfer.sealForSync(keychain, key.key)
        settings.floors = [:]
        settings.machines = [:]
        var application = SyncApplication()
        application.settings = settings.rows
        // Every item this keychain holds becomes this machine's, under the new key.
        let states = try store.transfer.syncStates(keychain)
        application.states = states.values.map { state in
            var state = state
            state.fingerprint = nil
            return state
        }
        try store.transfer.applySync(keychain, application)
        try folder.write(SyncHeader.wrap(key, password: password, kdf: kdf), as: RecordName.headerFileName)
        // Files under the old key: removed where they are this machine's, refused elsewhere.
        for name in (try? folder.names()) ?? [] {
            if case .file(let record) = RecordName.read(name), record.machine == settings.machine { folder.remove(name) }
        }
        merged[keychain] = nil
        _ = try push(keychain)
    }

    private func prepare(_ keychain: String, _ path: String) throws(KeychainError) -> SyncFolder {
        guard path.hasPrefix("/") else { throw .param("the sync folder must be an absolute path") }
        guard try settings(keychain) == nil else {
            throw KeychainError(SecStatus.duplicateItem, detail: "sync is already enabled on this keychain: `keywell sync disable` first")
        }
        guard !(try store.locking.isLocked(keychain)) else {
            throw KeychainError(SecStatus.interactionNotAllowed, detail: "the keychain is locked: unlock it first")
        }
        let folder = SyncFolder(path: path)
        try folder.check()
        return folder
    }

    private func start(_ keychain: String, _ settings: SyncSettings) throws(KeychainError) {
        var settings = settings
        settings.lastWrite = Self.now()
        var application = SyncApplication()
        application.settings = settings.rows
        try store.transfer.applySync(keychain, application)
        merged[keychain] = []
    }

    private func key(_ keychain: String, _ settings: SyncSettings) throws(KeychainError) -> SyncKey {
        SyncKey(try store.transfer.openForSync(keychain, settings.sealedKey))
    }

    // MARK: Local changes out

    /// Writes one record per local change since the last push (adds, changes, access-list
    /// changes, deletions; ThisDeviceOnly items never), then compacts when due. Returns the
    /// number of records written. The keychain must be unlocked.
    public func push(_ keychain: String) throws(KeychainError) -> Int {
        guard var settings = try settings(keychain) else { return 0 }
        let key = try key(keychain, settings)
        let folder = SyncFolder(path: settings.folder)
        let states = try store.transfer.syncStates(keychain)
        var changedItems: [UUID: (tag: ItemTag, state: SyncItemState?)] = [:]
        var seen = Set<Data>()
        for candidate in try store.transfer.syncCandidates(keychain) {
            let tag = key.tag(of: ItemIdentity(itemClass: candidate.itemClass, attributes: candidate.attributes))
            seen.insert(tag.bytes)
            let state = states[tag.bytes]
            if state == nil || state!.deleted || state!.fingerprint != candidate.fingerprint {
                changedItems[candidate.uuid] = (tag, state)
            }
        }
        let now = Self.now()
        var records: [(record: SyncRecord, state: SyncItemState)] = []
        for (item, fingerprint) in try store.transfer.syncItems(keychain, uuids: Array(changedItems.keys)) {
            guard let (tag, state) = changedItems[item.uuid] else { continue }
            let mdat: Int64 = if case .integer(let value)? = item.attributes[.modificationDate] { value } else { now }
            // A change that left the modification time as it was (an access list) still makes a newer version.
            let modified = max(mdat, (state?.modified ?? .min) &+ 1)
            var synced = item
            synced.attributes[.modificationDate] = .integer(modified)
            let record = SyncRecord(version: SyncVersion(modified: modified, machine: settings.machine), base: state.flatMap { Self.version($0) },
                                    machineName: hostName, change: .item(synced))
            // The fingerprint of what this record carries: a change made since is pushed next time.
            records.append((record, SyncItemState(tag: tag.bytes, fingerprint: fingerprint, modified: modified,
                                                  machine: Data(settings.machine.bytes), baseModified: state?.modified,
                                                  baseMachine: state?.machine, deleted: false, identity: synced.identity.stored)))
        }
        for state in states.values where !state.deleted && !seen.contains(state.tag) {
            guard let identity = ItemIdentity(stored: state.identity) else { continue }
            let modified = max(now, state.modified &+ 1)
            let record = SyncRecord(version: SyncVersion(modified: modified, machine: settings.machine), base: Self.version(state),
                                    machineName: hostName, change: .deleted(identity))
            records.append((record, SyncItemState(tag: state.tag, fingerprint: nil, modified: modified, machine: Data(settings.machine.bytes),
                                                  baseModified: state.modified, baseMachine: state.machine, deleted: true,
                                                  identity: state.identity)))
        }
        guard !records.isEmpty else { return 0 }
        // The sequence numbers are taken before any file is written: a crash never reuses a name.
        let first = settings.nextSequence
        settings.nextSequence += UInt64(records.count)
        settings.lastWrite = now
        var reserve = SyncApplication()
        reserve.settings = settings.rows
        try store.transfer.applySync(keychain, reserve)
        var application = SyncApplication()
        for (offset, (record, state)) in records.enumerated() {
            let name = RecordName(machine: settings.machine, sequence: first + UInt64(offset), kind: .record)
            try folder.write(RecordFile.seal(record, name: name, key: key), as: name.description)
            application.states.append(state)
        }
        try store.transfer.applySync(keychain, application)
        try compactIfDue(keychain, settings: settings, key: key, folder: folder)
        return records.count
    }

    /// A snapshot of this machine's latest records when its own files outnumber its live ones.
    private func compactIfDue(_ keychain: String, settings: SyncSettings, key: SyncKey, folder: SyncFolder) throws(KeychainError) {
        let own = (try folder.names()).compactMap { name -> RecordName? in
            if case .file(let record) = RecordName.read(name), record.machine == settings.machine { return record }
            return nil
        }
        let states = try store.transfer.syncStates(keychain).values.filter { $0.machine == Data(settings.machine.bytes) }
        guard SyncCompaction.isDue(ownFiles: own, liveRecords: states.count) else { return }
        var latest: [SyncRecord] = []
        let live = states.filter { !$0.deleted }
        let items = Dictionary(try store.transfer.syncCandidates(keychain).map {
            (key.tag(of: ItemIdentity(itemClass: $0.itemClass, attributes: $0.attributes)).bytes, $0.uuid)
        }) { first, _ in first }
        let full = Dictionary(try store.transfer.syncItems(keychain, uuids: live.compactMap { items[$0.tag] }).map { ($0.item.uuid, $0.item) }) { first, _ in first }
        for state in states {
            let version = SyncVersion(modified: state.modified, machine: settings.machine)
            let base = Self.version(ofBase: state)
            if state.deleted {
                guard let identity = ItemIdentity(stored: state.identity) else { continue }
                latest.append(SyncRecord(version: version, base: base, machineName: hostName, change: .deleted(identity)))
            } else if let uuid = items[state.tag], let item = full[uuid] {
                var synced = item
                synced.attributes[.modificationDate] = .integer(state.modified)
                latest.append(SyncRecord(version: version, base: base, machineName: hostName, change: .item(synced)))
            }
        }
        var settings = settings
        let sequence = settings.nextSequence
        settings.nextSequence += 1
        var reserve = SyncApplication()
        reserve.settings = settings.rows
        try store.transfer.applySync(keychain, reserve)
        do {
            try SyncCompaction.compact(folder, latest: latest, me: settings.machine, sequence: sequence, ownFiles: own, key: key)
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(SecStatus.io, detail: "compacting the sync folder: \(error)")
        }
        logger.info("sync: wrote snapshot \(sequence) of \(latest.count) records in place of \(own.count) files")
    }

    // MARK: Arrivals in

    /// What one merge did.
    public struct MergeSummary: Sendable, Equatable {
        public var applied = 0
        public var conflicts = 0
        public var refused: [String] = []

        public init() {}
    }

    /// Merges every file of the other machines not merged yet, in one transaction. The keychain
    /// must be unlocked; refused files are logged by name and counted, the rest merges.
    public func merge(_ keychain: String) throws(KeychainError) -> MergeSummary {
        guard var settings = try settings(keychain) else { return MergeSummary() }
        let key = try key(keychain, settings)
        let folder = SyncFolder(path: settings.folder)
        try folder.check()
        let done = merged[keychain] ?? []
        let contents: FolderContents
        do {
            contents = try FolderScan.scan(folder, key: key, me: settings.machine, floors: settings.floors,
                                           skip: { done.contains($0) })
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(SecStatus.io, detail: "reading the sync folder: \(error)")
        }
        var summary = MergeSummary()
        for (file, reason) in contents.refused where settings.refused[file] == nil {
            logger.warning("sync: refused \(settings.folder)/\(file): \(reason)")
            summary.refused.append(file)
            if settings.refused.count < SyncLimits.refusedNamesKept { settings.refused[file] = reason }
        }
        let states = try store.transfer.syncStates(keychain)
        var local: [ItemTag: LocalVersion] = [:]
        for state in states.values {
            guard let tag = ItemTag(bytes: state.tag), let version = Self.version(state) else { continue }
            local[tag] = LocalVersion(version: version, base: Self.version(ofBase: state), deleted: state.deleted)
        }
        // Items never written out (before a join) are this machine's versions too: an arrival
        // with the same primary key meets them as a concurrent change, never overwrites them unseen.
        for candidate in try store.transfer.syncCandidates(keychain) {
            let tag = key.tag(of: ItemIdentity(itemClass: candidate.itemClass, attributes: candidate.attributes))
            guard local[tag] == nil || local[tag]!.deleted else { continue }
            let mdat: Int64 = if case .integer(let value)? = candidate.attributes[.modificationDate] { value } else { 0 }
            local[tag] = LocalVersion(version: SyncVersion(modified: mdat, machine: settings.machine), base: nil, deleted: false)
        }
        var arrived: [(tag: ItemTag, record: SyncRecord)] = []
        for (name, record) in contents.records {
            // A ThisDeviceOnly item never travels; one that arrives was not written by Keywell.
            if let item = record.item, item.accessibility.isThisDeviceOnly {
                if settings.refused[name.description] == nil { settings.refused[name.description] = "it holds a ThisDeviceOnly item" }
                continue
            }
            arrived.append((key.tag(of: record.identity), record))
        }
        let plan = SyncMerge.plan(local: local, arrived: arrived)
        var application = SyncApplication()
        for (tag, record) in plan.apply {
            let state = SyncItemState(tag: tag.bytes, fingerprint: nil, modified: record.version.modified, machine: Data(record.version.machine.bytes),
                                      baseModified: record.base?.modified, baseMachine: record.base.map { Data($0.machine.bytes) },
                                      deleted: record.isTombstone, identity: record.identity.stored)
            switch record.change {
            case .item(let item):
                application.upserts.append((item, state))
            case .deleted(let identity):
                application.deletions.append((identity.itemClass, identity.key, state))
            }
        }
        application.conflicts = try keptVersions(plan.conflicts, keychain: keychain, key: key)
        summary.conflicts = application.conflicts.count
        for (machine, seen) in contents.machines where seen.lastChange >= settings.machines[machine]?.lastChange ?? .min {
            settings.machines[machine] = SyncSettings.MachineSeen(name: SyncSettings.printable(seen.name), lastChange: seen.lastChange)
        }
        for (machine, floor) in contents.floors { settings.floors[machine] = max(settings.floors[machine] ?? 0, floor) }
        settings.lastMerge = Self.now()
        application.settings = settings.rows
        summary.applied = try store.transfer.applySync(keychain, application)
        merged[keychain, default: []].formUnion(contents.read)
        if summary.applied > 0 || summary.conflicts > 0 {
            logger.info("sync: merged \(summary.applied) changes into \(keychain), kept \(summary.conflicts) losing versions")
        }
        return summary
    }

    /// The losers worth keeping: a local loser's contents read before it is replaced, and
    /// neither kind when its contents equal the winner's.
    private func keptVersions(_ conflicts: [SyncConflict], keychain: String, key: SyncKey) throws(KeychainError)
        -> [(entry: SyncConflictEntry, secret: Data)] {
        guard !conflicts.isEmpty else { return [] }
        var localItems: [ItemTag: UUID] = [:]
        for candidate in try store.transfer.syncCandidates(keychain) {
            localItems[key.tag(of: ItemIdentity(itemClass: candidate.itemClass, attributes: candidate.attributes))] = candidate.uuid
        }
        let wanted = conflicts.compactMap { conflict -> UUID? in
            if case .local = conflict.loser { return localItems[conflict.tag] }
            return nil
        }
        let full = Dictionary(try store.transfer.syncItems(keychain, uuids: wanted).map { ($0.item.uuid, $0.item) }) { first, _ in first }
        var kept: [(entry: SyncConflictEntry, secret: Data)] = []
        for conflict in conflicts {
            switch conflict.loser {
            case .arrived(let record):
                guard let item = record.item else { continue }
                kept.append((Self.entry(item.attributes, modified: record.version.modified, machine: record.machineName), item.secret))
            case .local(let version):
                guard let uuid = localItems[conflict.tag], let item = full[uuid] else { continue }
                kept.append((Self.entry(item.attributes, modified: version.version.modified, machine: hostName), item.secret))
            }
        }
        return kept
    }

    // MARK: Status

    public func conflicts(_ keychain: String) throws(KeychainError) -> [SyncConflictEntry] { try store.transfer.syncConflicts(keychain) }

    public func conflictSecret(_ keychain: String, id: Int64) throws(KeychainError) -> Data { try store.transfer.syncConflictSecret(keychain, id: id) }

    // MARK: Helpers

    static func now() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    static func version(_ state: SyncItemState) -> SyncVersion? {
        MachineID(bytes: Array(state.machine)).map { SyncVersion(modified: state.modified, machine: $0) }
    }

    static func version(ofBase state: SyncItemState) -> SyncVersion? {
        guard let modified = state.baseModified, let machine = state.baseMachine.flatMap({ MachineID(bytes: Array($0)) }) else { return nil }
        return SyncVersion(modified: modified, machine: machine)
    }

    private static func entry(_ attributes: [ItemAttribute: AttributeValue], modified: Int64, machine: String) -> SyncConflictEntry {
        func text(_ attribute: ItemAttribute) -> String {
            if case .text(let value)? = attributes[attribute] { return SyncSettings.printable(value) }
            return ""
        }
        let service = text(.service).isEmpty ? text(.server) : text(.service)
        return SyncConflictEntry(label: text(.label), service: service, account: text(.account), modified: modified,
                                 machine: SyncSettings.printable(machine))
    }
}
