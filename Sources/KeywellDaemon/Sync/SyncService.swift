import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSync
import KeywellSystem
import Logging

/// Sync between machines in the daemon (docs/sync.md): each synced keychain's local changes go
/// into its folder within a second, and what arrives in the folder (inotify) is merged within
/// seconds while the keychain is unlocked, the rest right after the next unlock. One thread does
/// the work, so a keychain's pushes and merges never overlap; API calls take the same lock.
final class SyncService: @unchecked Sendable {
    private let store: KeychainStore
    private let engine: SyncEngine
    private let logger: Logger
    private let kdf: KDFParameters
    /// Guards `engine`, which is not thread-safe: held by the work thread for a job, and by an
    /// API call. Never taken under `condition`.
    private let engineLock = NSLock()
    /// Guards `jobs`, `watches` and `started`; the store's events take it from whatever thread
    /// changed items (the work thread included, while it holds `engineLock`).
    private let condition = ConditionLock()
    private var jobs: [String: Job] = [:]
    private var watches: [String: FolderWatch] = [:]
    private var started = false

    /// How long after a local change its record is written (changes made together go together).
    static let pushDelay: Duration = .milliseconds(150)
    /// How long after a file arrives the folder is merged (a sync engine delivers files in bursts).
    static let mergeDelay: Duration = .milliseconds(700)

    private struct Job: OptionSet {
        let rawValue: Int
        static let push = Job(rawValue: 1)
        static let merge = Job(rawValue: 2)
    }

    init(store: KeychainStore, kdf: KDFParameters, logger: Logger) {
        self.store = store
        self.kdf = kdf
        self.logger = logger
        engine = SyncEngine(store: store, logger: logger)
    }

    /// Watches every synced keychain's folder, and merges those already unlocked.
    func start() {
        for keychain in (try? store.registry.listKeychains()) ?? [] {
            guard let settings = try? locked({ () throws(KeychainError) in try engine.settings(keychain) }) else { continue }
            watch(keychain, folder: settings.folder)
            schedule([.merge, .push], keychain, after: .zero)
        }
    }

    /// The store's events: a local change to push, an unlock to merge at.
    func keychainEvent(_ event: KeychainEvent) {
        switch event {
        case .itemsChanged(let keychain):
            if condition.withLock({ watches[keychain] != nil }) { schedule(.push, keychain, after: Self.pushDelay) }
        case .unlocked(let keychain):
            if condition.withLock({ watches[keychain] != nil }) { schedule([.merge, .push], keychain, after: .zero) }
        default:
            break
        }
    }

    // MARK: The API's calls (on the caller's worker thread)

    func enable(_ keychain: String, folder: String, password: SecretBytes, join: Bool) throws(KeychainError) {
        let name = try resolve(keychain)
        try locked { () throws(KeychainError) in
            if join {
                try engine.join(name, folder: folder, password: password)
            } else {
                try engine.enable(name, folder: folder, password: password, kdf: kdf)
            }
        }
        watch(name, folder: folder)
        logger.info("sync: \(join ? "joined" : "enabled") \(name) with \(folder)")
    }

    func disable(_ keychain: String) throws(KeychainError) {
        let name = try resolve(keychain)
        try locked { () throws(KeychainError) in try engine.disable(name) }
        condition.withLock { watches.removeValue(forKey: name)?.stop() }
    }

    func rekey(_ keychain: String, password: SecretBytes) throws(KeychainError) {
        let name = try resolve(keychain)
        try locked { () throws(KeychainError) in try engine.rekey(name, password: password, kdf: kdf) }
    }

    func status(_ keychain: String) throws(KeychainError) -> WireDictionary {
        let name = try resolve(keychain)
        let settings = try locked { () throws(KeychainError) in try engine.settings(name) }
        guard let settings else { return [SyncStatusKey.enabled: .bool(false)] }
        var machines = ["\(settings.machine.hex)\t\(engine.hostName)\t\(settings.lastWrite ?? 0)"]
        machines += settings.machines.sorted { $0.key < $1.key }.map { "\($0.key.hex)\t\($0.value.name)\t\($0.value.lastChange)" }
        return [
            SyncStatusKey.enabled: .bool(true), SyncStatusKey.folder: .string(settings.folder),
            SyncStatusKey.machines: .strings(machines), SyncStatusKey.lastMerge: .integer(settings.lastMerge ?? -1),
            SyncStatusKey.refused: .strings(settings.refused.sorted { $0.key < $1.key }.map { "\($0.key)\t\($0.value)" }),
        ]
    }

    func conflicts(_ keychain: String) throws(KeychainError) -> [WireDictionary] {
        let name = try resolve(keychain)
        return try locked { () throws(KeychainError) in try engine.conflicts(name) }.map {
            [SyncConflictKey.version: .integer($0.id), SyncConflictKey.label: .string($0.label), SyncConflictKey.service: .string($0.service),
             SyncConflictKey.account: .string($0.account), SyncConflictKey.when: .integer($0.modified), SyncConflictKey.machine: .string($0.machine)]
        }
    }

    func conflictSecret(_ keychain: String, version: Int64) throws(KeychainError) -> Data {
        let name = try resolve(keychain)
        return try locked { () throws(KeychainError) in try engine.conflictSecret(name, id: version) }
    }

    // MARK: Work

    private func resolve(_ keychain: String) throws(KeychainError) -> String {
        keychain.isEmpty ? try store.registry.defaultKeychain() : keychain
    }

    private func locked<T>(_ body: () throws(KeychainError) -> T) throws(KeychainError) -> T {
        engineLock.lock()
        defer { engineLock.unlock() }
        return try body()
    }

    private func watch(_ keychain: String, folder: String) {
        condition.withLock {
            guard watches[keychain] == nil else { return }
            watches[keychain] = FolderWatch(path: folder, logger: logger) { [weak self] in
                self?.schedule(.merge, keychain, after: Self.mergeDelay)
            }
        }
    }

    private func schedule(_ job: Job, _ keychain: String, after delay: Duration) {
        let isNew = condition.withLock { () -> Bool in
            let pending = jobs[keychain] ?? []
            jobs[keychain] = pending.union(job)
            return !pending.isSuperset(of: job)
        }
        guard isNew else { return }
        TimerThread.shared.schedule(after: delay) { [weak self] in self?.wake() }
    }

    /// Starts the work thread once, then wakes it.
    private func wake() {
        let start = condition.withLock { () -> Bool in
            condition.signal()
            defer { started = true }
            return !started
        }
        if start { startDetachedThread(name: "sync", stackSize: 512 << 10) { [self] in run() } }
    }

    private func run() {
        while true {
            let (keychain, job, watched) = condition.withLock { () -> (String, Job, Bool) in
                while jobs.isEmpty { _ = condition.wait(untilNanoseconds: nil) }
                let (keychain, job) = jobs.first!
                jobs[keychain] = nil
                return (keychain, job, watches[keychain] != nil)
            }
            guard watched else { continue }
            engineLock.lock()
            perform(job, keychain)
            engineLock.unlock()
        }
    }

    /// Under `engineLock`. A locked keychain waits for its unlock; a push comes first, so that
    /// a merge never meets a local change not written out yet.
    private func perform(_ job: Job, _ keychain: String) {
        guard (try? store.locking.isLocked(keychain)) == false else { return }
        do throws(KeychainError) {
            _ = try engine.push(keychain)
            if job.contains(.merge) {
                let merged = try engine.merge(keychain)
                if merged.applied > 0 { _ = try engine.push(keychain) }
            }
        } catch {
            logger.warning("sync: \(keychain): \(error.detail ?? SecStatus.message(for: error.status))")
        }
    }
}
