import Foundation
import GRDB
import KeywellProtocol
import KeywellSystem

/// An open keychain: its database and, while unlocked, its master key. Lock state lives only in
/// this process's memory; locking drops the key (SecretBytes zeroes it once no call still uses it).
final class KeychainFile: Sendable {
    let location: KeychainLocation
    let database: KeychainDatabase
    let uuid: UUID
    /// The file this handle opened; a different file at the same path needs a new handle.
    let identity: FileIdentity
    /// AfterFirstUnlock secrets kept through automatic locks (`SessionSecrets`).
    let sessionSecrets = SessionSecrets()

    private struct State {
        var masterKey: SecretBytes? {
            didSet {
                integrityKey = masterKey.map(IntegrityKey.init(masterKey:))
                // Every lock, whatever its cause, sets the key to nil: the rows go with it.
                if masterKey == nil {
                    checkedRows.removeAll()
                    unlocks &+= 1
                }
            }
        }
        /// Derived from the master key; present exactly when it is.
        private(set) var integrityKey: IntegrityKey?
        var settings: KeychainSettings
        var lastUse: Date
        /// Rows checked under the current key (`CheckedRowCache`); empty while locked.
        var checkedRows = CheckedRowCache()
        /// Moves on at every lock: a read that began before one keeps nothing after it.
        var unlocks: UInt64 = 0
    }

    private let state: Protected<State>

    init(location: KeychainLocation, identity: FileIdentity, masterKey: SecretBytes? = nil) throws(KeychainError) {
        self.location = location
        self.identity = identity
        database = try KeychainDatabase(opening: location.path)
        let header = try database.readHeader()
        uuid = header.uuid
        var initial = State(masterKey: nil, settings: header.settings, lastUse: Date())
        initial.masterKey = masterKey
        state = Protected(initial)
        if masterKey != nil { sessionSecrets.open() }
    }

    var isLocked: Bool { state.withLock { $0.masterKey == nil } }

    /// The key for item secrets; `errSecInteractionNotAllowed` while locked.
    func masterKey() throws(KeychainError) -> SecretBytes {
        guard let key = state.withLock({ $0.masterKey }) else {
            throw KeychainError(SecStatus.interactionNotAllowed, detail: "keychain \(location.displayName) is locked")
        }
        return key
    }

    /// Both keys; `errSecInteractionNotAllowed` while locked.
    func keys() throws(KeychainError) -> (master: SecretBytes, integrity: IntegrityKey) {
        guard let keys = state.withLock({ state in state.masterKey.map { ($0, state.integrityKey!) } }) else {
            throw KeychainError(SecStatus.interactionNotAllowed, detail: "keychain \(location.displayName) is locked")
        }
        return keys
    }

    /// The key of the integrity MACs; `errSecInteractionNotAllowed` while locked.
    func integrityKey() throws(KeychainError) -> IntegrityKey {
        try keys().integrity
    }

    /// Whether new items get an access list (`KeychainSettings.enforceAccess`), as last read
    /// from the header.
    var enforcesAccess: Bool { state.withLock { $0.settings.enforceAccess } }

    /// The key of the integrity MACs while unlocked, else nil (reads then go unchecked).
    var integrityKeyIfUnlocked: IntegrityKey? {
        state.withLock { $0.integrityKey }
    }

    /// What a screened read needs of the lock state, taken under the lock once: the integrity
    /// key with the unlock it belongs to, and (`master`) the key for secrets; nil while locked.
    func readKeys(master: Bool) -> (integrity: IntegrityKey, unlock: UInt64, master: SecretBytes?)? {
        state.withLock { state in
            guard let integrity = state.integrityKey else { return nil }
            return (integrity, state.unlocks, master ? state.masterKey : nil)
        }
    }

    /// What the kept rows say about `selection` under `current`.
    enum CheckedRowsAnswer {
        case rows([CheckedRow])
        /// Load every item first (`CheckedRowCache.wantsLoad`).
        case load
        case statements
    }

    /// `markingUse`: kept rows found also re-arm the idle timer (`markUsed`), under the same lock.
    func checkedRows(_ selection: FreeformSelection, current: CheckedRowCache.Tag, markingUse: Bool = false) -> CheckedRowsAnswer {
        let now = markingUse ? Date() : nil
        return state.withLock { state in
            guard state.masterKey != nil else { return .statements }
            if let rows = state.checkedRows.rows(selection, current: current) {
                if let now { state.lastUse = now }
                return .rows(rows)
            }
            return state.checkedRows.wantsLoad(current) ? .load : .statements
        }
    }

    /// Keeps a load read under `loaded` by the key of `unlock` (`CheckedRowCache.load`): not if
    /// the keychain locked since (even if unlocked again), nor if the tag moved meanwhile.
    func loadCheckedRows(_ rows: [CheckedRow]?, loaded: CheckedRowCache.Tag, current: CheckedRowCache.Tag, unlock: UInt64) {
        state.withLock { state in
            guard state.masterKey != nil, state.unlocks == unlock else { return }
            state.checkedRows.load(rows, tag: loaded, current: current)
        }
    }

    /// A read under `current` went to the statements and checked `items` items (`CheckedRowCache.spent`).
    func spentOnStatements(_ items: Int, under current: CheckedRowCache.Tag) {
        state.withLock { $0.checkedRows.spent(items, under: current) }
    }

    /// Drops the kept rows (memory trim, the file forgotten).
    func dropCheckedRows() {
        state.withLock { $0.checkedRows.removeAll() }
    }

    /// How many items' rows are kept (tests).
    var checkedRowCount: Int { state.withLock { $0.checkedRows.itemCount } }

    /// Re-arms the idle timer.
    func markUsed(at date: Date = Date()) {
        state.withLock { $0.lastUse = date }
    }

    /// Checks the password even when already unlocked. Returns whether the state changed.
    /// Upgrades a file of an older format (`KeychainUpgrade`); refuses (`errSecDecode`) a header
    /// whose lock settings were edited outside Keywell.
    func unlock(password: SecretBytes) throws(KeychainError) -> Bool {
        let (header, key) = try currentHeader(password: password)
        return state.withLock { state in
            state.settings = header.settings
            state.lastUse = Date()
            guard state.masterKey == nil else { return false }
            state.masterKey = key
            return true
        }
    }

    /// Unlocks with a master key from elsewhere than the password (`SecondWrapping`), once the
    /// header's MAC vouches for it. A file of an older format needs its password once (its
    /// upgrade re-wraps under the password's key). Returns whether the state changed.
    func unlock(masterKey: SecretBytes) throws(KeychainError) -> Bool {
        let header = try database.readHeader()
        guard header.formatVersion >= KeychainHeader.currentFormatVersion else {
            throw KeychainError(SecStatus.authFailed, detail: "\(location.displayName) must be unlocked once with its password first")
        }
        do {
            try header.checkMAC(IntegrityKey(masterKey: masterKey), path: location.path)
        } catch {
            throw KeychainError(SecStatus.authFailed, detail: "the master key does not open \(location.displayName)")
        }
        return state.withLock { state in
            state.settings = header.settings
            state.lastUse = Date()
            guard state.masterKey == nil else { return false }
            state.masterKey = masterKey
            return true
        }
    }

    /// An explicit lock: drops the AfterFirstUnlock copies too (even when already locked by a
    /// timer). Returns whether the lock state changed.
    func lock() -> Bool {
        sessionSecrets.wipe()
        return state.withLock { state in
            guard state.masterKey != nil else { return false }
            state.masterKey = nil
            return true
        }
    }

    /// Locks when `lockAfterSeconds` have passed since the last use.
    func lockIfIdle(now: Date) -> Bool {
        state.withLock { state in
            guard state.masterKey != nil, let deadline = Self.deadline(state), deadline <= now else { return false }
            state.masterKey = nil
            return true
        }
    }

    func lockForSleep() -> Bool {
        state.withLock { state in
            guard state.masterKey != nil, state.settings.lockOnSleep else { return false }
            state.masterKey = nil
            return true
        }
    }

    func lockForScreenLock() -> Bool {
        state.withLock { state in
            guard state.masterKey != nil, state.settings.lockOnScreenLock else { return false }
            state.masterKey = nil
            return true
        }
    }

    /// When this keychain would lock for idleness, if it is unlocked and has a timeout.
    var idleDeadline: Date? {
        state.withLock { $0.masterKey == nil ? nil : Self.deadline($0) }
    }

    private static func deadline(_ state: State) -> Date? {
        let seconds = state.settings.lockAfterSeconds
        return seconds > 0 ? state.lastUse.addingTimeInterval(TimeInterval(seconds)) : nil
    }

    /// Re-wraps the master key under a new password; the lock state stays as it was. The slow
    /// key derivations run before the write, so the keychain stays usable meanwhile. `link`, when
    /// given, is written in the same transaction (the login keychain's `LoginPasswordLink`).
    func changePassword(old: SecretBytes, new: SecretBytes, kdf: KDFParameters, link: LoginPasswordLink? = nil) throws(KeychainError) {
        let (header, masterKey) = try currentHeader(password: old)
        let integrity = IntegrityKey(masterKey: masterKey)
        let rewrapped = try header.rewrapped(masterKey: masterKey, password: new, kdf: kdf)
        try database.write { db in
            let current = try KeychainDatabase.readHeader(db, path: location.path)
            guard current.salt == header.salt, current.wrappedKey == header.wrappedKey else {
                throw KeychainError(SecStatus.authFailed, detail: "the password of \(location.displayName) changed meanwhile")
            }
            // Settings changed through the API meanwhile are kept; settings edited on disk are not.
            try current.checkMAC(integrity, path: location.path)
            try KeychainDatabase.writeHeader(rewrapped.withSettings(current.settings, key: integrity), db)
            if let link { try KeychainMetadata.write(KeychainMetadata.loginPasswordLink, link.storedValue, db) }
        }
        markUsed()
    }

    /// Counts as use, as macOS's setParameters does: a shorter timeout then runs from now, and
    /// never locks at once a keychain that was idle longer than the new value.
    /// Needs the keychain unlocked (the new settings get a new MAC), as on macOS.
    func updateSettings(_ changes: WireDictionary) throws(KeychainError) {
        let integrity = try integrityKey()
        let settings = try database.write { db in
            let header = try KeychainDatabase.readHeader(db, path: location.path)
            try header.checkMAC(integrity, path: location.path)
            let updated = header.withSettings(try header.settings.applying(changes), key: integrity)
            try KeychainDatabase.writeHeader(updated, db)
            return updated.settings
        }
        state.withLock { state in
            state.settings = settings
            state.lastUse = Date()
        }
    }

    /// The header, upgraded to the current format if it was older, with its MAC checked, and
    /// the master key `password` unwraps from it.
    private func currentHeader(password: SecretBytes) throws(KeychainError) -> (KeychainHeader, SecretBytes) {
        var header = try database.readHeader()
        let (masterKey, wrappingKey) = try header.unwrapKeys(password: password)
        if header.formatVersion < KeychainHeader.currentFormatVersion {
            try KeychainUpgrade.upgradeIfNeeded(database, from: header, masterKey: masterKey, wrappingKey: wrappingKey)
            header = try database.readHeader()
            guard header.formatVersion >= KeychainHeader.currentFormatVersion else {
                throw KeychainError(SecStatus.authFailed, detail: "the password of \(location.displayName) changed meanwhile")
            }
        }
        try header.checkMAC(IntegrityKey(masterKey: masterKey), path: location.path)
        return (header, masterKey)
    }
}
