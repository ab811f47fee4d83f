import Foundation
import KeywellProtocol

/// A keychain's lock state, password, identity, information and settings.
extension KeychainStore {
    /// The password is checked even when the keychain is already unlocked.
    func unlock(_ nameOrPath: String, password: SecretBytes) throws(KeychainError) {
        let file = try file(at: location(nameOrPath))
        if try file.unlock(password: password) {
            file.keepSessionCopies(logger: logger)
            emit([.unlocked(file.location.displayName)])
        }
    }

    /// The random identity written into the keychain's header when it was created. It stays
    /// through password changes, and a copy of the file carries it too; since the wrapped
    /// master key's associated data covers it, a copy whose identity was edited opens with no
    /// password at all. Works while locked.
    func keychainIdentity(_ nameOrPath: String) throws(KeychainError) -> UUID {
        try file(at: location(nameOrPath)).uuid
    }

    func lock(_ nameOrPath: String) throws(KeychainError) {
        let file = try file(at: location(nameOrPath))
        if file.lock() {
            file.database.settleAfterLock()
            emit([.locked(file.location.displayName)])
        }
    }

    /// The last login session ended: every keychain's AfterFirstUnlock copies go, whatever its
    /// lock state (an unlocked keychain keeps them again at its next unlock).
    func dropSessionSecrets() {
        for file in allOpenFiles { file.sessionSecrets.wipe() }
    }

    func lockAll() {
        let locked = allOpenFiles.filter { $0.lock() }
        for file in locked { file.database.settleAfterLock() }
        emit(locked.map { .locked($0.location.displayName) })
    }

    /// Every open keychain's SQLite page caches given back to malloc (`releasePageCaches`), and
    /// its checked rows dropped (`CheckedRowCache`): the daemon's trim half a second after the
    /// last call, before malloc returns its free heap.
    public func releasePageCaches() {
        for file in allOpenFiles {
            file.dropCheckedRows()
            file.database.releasePageCaches()
        }
    }

    /// Bytes the SQLite page caches of every open keychain hold.
    public func pageCacheBytes() -> Int {
        allOpenFiles.reduce(0) { $0 + $1.database.pageCacheBytes() }
    }

    /// Every open keychain's -wal moved into its file (`KeychainDatabase.checkpoint`), so that
    /// the `.keychain-db` files alone are complete: when the daemon exits.
    public func checkpointAll() {
        for file in allOpenFiles { file.database.checkpoint() }
    }

    func isLocked(_ nameOrPath: String) throws(KeychainError) -> Bool {
        try file(at: location(nameOrPath)).isLocked
    }

    /// `GetInfo`: works while locked.
    func info(_ nameOrPath: String) throws(KeychainError) -> WireDictionary {
        let location = try location(nameOrPath)
        let file = try file(at: location)
        let (header, itemCount) = try file.database.read { db in
            (try KeychainDatabase.readHeader(db, path: location.path), try ItemTable.count(db))
        }
        // Unlocked, the settings shown are the ones the header's MAC vouches for.
        if let integrity = file.integrityKeyIfUnlocked { try header.checkMAC(integrity, path: location.path) }
        return [
            KeychainInfoKey.name: .string(location.displayName),
            KeychainInfoKey.path: .string(location.path),
            KeychainInfoKey.locked: .bool(file.isLocked),
            KeychainInfoKey.itemCount: .integer(Int64(itemCount)),
            KeychainInfoKey.lockOnSleep: .bool(header.settings.lockOnSleep),
            KeychainInfoKey.lockOnScreenLock: .bool(header.settings.lockOnScreenLock),
            KeychainInfoKey.lockAfterSeconds: .integer(Int64(header.settings.lockAfterSeconds)),
            KeychainInfoKey.enforceAccess: .bool(header.settings.enforceAccess),
            KeychainInfoKey.isDefault: .bool(try defaultLocation() == location),
            KeychainInfoKey.isLogin: .bool(location == loginLocation),
        ]
    }

    /// Changes only the keys given (`lockOnSleep`, `lockOnScreenLock`, `lockAfterSeconds`, `enforceAccess`);
    /// applies at once. Needs
    /// the keychain unlocked: the header's MAC covers the settings.
    func setSettings(_ nameOrPath: String, _ settings: WireDictionary) throws(KeychainError) {
        try file(at: location(nameOrPath)).updateSettings(settings)
    }
}
