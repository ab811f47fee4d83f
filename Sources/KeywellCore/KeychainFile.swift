import Foundation
import GRDB
import KeywellProtocol

/// An open keychain: its database and, while unlocked, its master key. Lock state lives only in
/// this process's memory; locking drops the key (SecretBytes zeroes it once no call still uses it).
final class KeychainFile: Sendable {
    let location: KeychainLocation
    let database: KeychainDatabase
    let uuid: UUID
    /// The file this handle opened; a different file at the same path needs a new handle.
    let identity: FileIdentity

    private struct State {
        var masterKey: SecretBytes?
        var settings: KeychainSettings
        var lastUse: Date
    }

    private let state: Protected<State>

    init(location: KeychainLocation, identity: FileIdentity, masterKey: SecretBytes? = nil) throws(KeychainError) {
        self.location = location
        self.identity = identity
        database = try KeychainDatabase(opening: location.path)
        let header = try database.readHeader()
        uuid = header.uuid
        state = Protected(State(masterKey: masterKey, settings: header.settings, lastUse: Date()))
    }

    var isLocked: Bool { state.withLock { $0.masterKey == nil } }

    /// The key for item secrets; `errSecInteractionNotAllowed` while locked.
    func masterKey() throws(KeychainError) -> SecretBytes {
        guard let key = state.withLock({ $0.masterKey }) else {
            throw KeychainError(SecStatus.interactionNotAllowed, detail: "keychain \(location.displayName) is locked")
        }
        return key
    }

    /// Re-arms the idle timer.
    func markUsed(at date: Date = Date()) {
        state.withLock { $0.lastUse = date }
    }

    /// Checks the password even when already unlocked. Returns whether the state changed.
    func unlock(password: SecretBytes) throws(KeychainError) -> Bool {
        let header = try database.readHeader()
        let key = try header.unwrapMasterKey(password: password)
        return state.withLock { state in
            state.settings = header.settings
            state.lastUse = Date()
            guard state.masterKey == nil else { return false }
            state.masterKey = key
            return true
        }
    }

    /// Returns whether the state changed.
    func lock() -> Bool {
        state.withLock { state in
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

    /// When this keychain would lock for idleness, if it is unlocked and has a timeout.
    var idleDeadline: Date? {
        state.withLock { $0.masterKey == nil ? nil : Self.deadline($0) }
    }

    private static func deadline(_ state: State) -> Date? {
        let seconds = state.settings.lockAfterSeconds
        return seconds > 0 ? state.lastUse.addingTimeInterval(TimeInterval(seconds)) : nil
    }

    /// Re-wraps the master key under a new password; the lock state stays as it was. The slow
    /// key derivations run before the write, so the keychain stays usable meanwhile.
    func changePassword(old: SecretBytes, new: SecretBytes, kdf: KDFParameters) throws(KeychainError) {
        let header = try database.readHeader()
        let masterKey = try header.unwrapMasterKey(password: old)
        var rewrapped = try header.rewrapped(masterKey: masterKey, password: new, kdf: kdf)
        try database.write { db in
            let current = try KeychainDatabase.readHeader(db, path: location.path)
            guard current.salt == header.salt, current.wrappedKey == header.wrappedKey else {
                throw KeychainError(SecStatus.authFailed, detail: "the password of \(location.displayName) changed meanwhile")
            }
            rewrapped.settings = current.settings
            try KeychainDatabase.writeHeader(rewrapped, db)
        }
        markUsed()
    }

    /// Counts as use, as macOS's setParameters does: a shorter timeout then runs from now, and
    /// never locks at once a keychain that was idle longer than the new value.
    func updateSettings(_ changes: WireDictionary) throws(KeychainError) {
        let settings = try database.write { db in
            var header = try KeychainDatabase.readHeader(db, path: location.path)
            header.settings = try header.settings.applying(changes)
            try KeychainDatabase.writeHeader(header, db)
            return header.settings
        }
        state.withLock { state in
            state.settings = settings
            state.lastUse = Date()
        }
    }
}
