import Foundation
import KeywellProtocol

/// Keychain management: create, delete, lists, default, lock state, password, settings.
extension KeychainStore {
    /// A new keychain, unlocked, not added to the search list, with `label` if given (see
    /// `keychainLabel`). Returns its absolute path.
    public func createKeychain(_ nameOrPath: String, password: SecretBytes, label: String? = nil) throws(KeychainError) -> String {
        let location = try location(nameOrPath)
        if let label, label.utf8.count > Self.labelMaximumBytes || label.utf8.contains(0) {
            throw .param("a keychain label is at most \(Self.labelMaximumBytes) bytes with no NUL")
        }
        return try administering { (lifecycle: inout [KeychainLifecycleEvent]) throws(KeychainError) in
            if location.isInKeychainsFolder {
                try FileSafety.ensurePrivateDirectory(location.directory)
            } else if try !FileSafety.checkDirectory(location.directory, ownedByUser: false) {
                throw .param("folder \(location.directory) does not exist")
            }
            if try KeychainFileSet.check(location.path) != nil {
                throw KeychainError(SecStatus.duplicateKeychain, detail: location.displayName)
            }
            let masterKey = Sodium.randomKey()
            let settings: KeychainSettings = location == loginLocation ? .login : .standard
            let header = try KeychainHeader.make(
                uuid: UUID(), masterKey: masterKey, password: password, kdf: kdf, settings: settings)
            try KeychainDatabase.create(at: location.path, header: header)
            lifecycle.append(.created(location.displayName))
            let file = try register(location, masterKey: masterKey)
            // Before it is announced, so nobody sees it without its label.
            if let label { try Self.writeLabel(label, in: file) }
            logger.debug("created keychain", metadata: ["keychain": "\(location.displayName)"])
            return location.path
        }
    }

    /// Deletes the file; drops the keychain from the search list and, if it was the default,
    /// leaves no default.
    public func deleteKeychain(_ nameOrPath: String) throws(KeychainError) {
        let location = try location(nameOrPath)
        try administering { (lifecycle: inout [KeychainLifecycleEvent]) throws(KeychainError) in
            // Only the file's existence and ownership matter: a damaged keychain can be deleted.
            guard try fileIdentity(at: location) != nil else {
                throw KeychainError(SecStatus.noSuchKeychain, detail: location.displayName)
            }
            forget(location)
            for suffix in ["", "-wal", "-shm", "-journal"] {
                if unlink(location.path + suffix) != 0, errno != ENOENT {
                    throw KeychainError(SecStatus.wrPerm, detail: "cannot delete \(location.path + suffix): \(String(cString: strerror(errno)))")
                }
                // Gone once its main file is: announced even if a -wal or -shm file stays behind.
                if suffix.isEmpty { lifecycle.append(.deleted(location.displayName)) }
            }
            let settings = try userSettings.read().settings
            let isListed = settings.searchList.contains { (try? self.location($0)) == location }
            let isDefault = settings.defaultKeychain.map { (try? self.location($0)) == location } ?? false
            // Only then: a fresh user without a settings file keeps the fresh-user rules. From
            // here on the list is kept as it is now, even one that followed the default.
            if isListed || isDefault {
                try userSettings.update { (settings: inout UserSettings) throws(KeychainError) in
                    settings.explicitSearchList = settings.searchList.filter { (try? self.location($0)) != location }
                    if isDefault { settings.defaultKeychain = nil }
                }
            }
            logger.debug("deleted keychain", metadata: ["keychain": "\(location.displayName)"])
        }
    }

    /// Every keychain the user has: the folder's, then path-addressed ones from the settings.
    public func listKeychains() throws(KeychainError) -> [String] {
        var names: [String] = []
        let folder = resolver.keychainsDirectory
        if try FileSafety.checkDirectory(folder, ownedByUser: true) {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            names = entries.sorted().compactMap { entry in
                let location = resolver.location(forPath: folder + "/" + entry)
                return location.isInKeychainsFolder ? location.displayName : nil
            }
        }
        let settings = try userSettings.read().settings
        for entry in settings.searchList + [settings.defaultKeychain].compactMap({ $0 }) {
            guard let location = try? location(entry), !location.isInKeychainsFolder,
                !names.contains(location.displayName),
                (try? KeychainFileSet.check(location.path)) != nil
            else { continue }
            names.append(location.displayName)
        }
        return names
    }

    public func searchList() throws(KeychainError) -> [String] {
        try userSettings.read().settings.searchList
    }

    /// Keychains need not exist yet (searches skip missing ones). Repeats are dropped. As macOS
    /// does, a list of just `login` while `login` is the default is stored as no list at all, so
    /// it goes on following the default.
    public func setSearchList(_ list: [String]) throws(KeychainError) {
        var names: [String] = []
        var seen: Set<String> = []
        for entry in list {
            let name = try location(entry).displayName
            if seen.insert(name).inserted { names.append(name) }
        }
        let login = loginLocation
        try administering { _ throws(KeychainError) in
            _ = try userSettings.update { (settings: inout UserSettings) throws(KeychainError) in
                let onlyLogin = names.count == 1 && (try? location(names[0])) == login
                let defaultIsLogin = settings.defaultKeychain.map { (try? location($0)) == login } ?? false
                settings.explicitSearchList = onlyLogin && defaultIsLogin ? nil : names
            }
        }
    }

    public func defaultKeychain() throws(KeychainError) -> String {
        guard let location = try defaultLocation() else { throw KeychainError(SecStatus.noDefaultKeychain) }
        return location.displayName
    }

    /// The keychain must exist.
    public func setDefaultKeychain(_ nameOrPath: String) throws(KeychainError) {
        let location = try location(nameOrPath)
        try administering { _ throws(KeychainError) in
            _ = try file(at: location)
            _ = try userSettings.update { $0.defaultKeychain = location.displayName }
        }
    }

    public func loginKeychain() throws(KeychainError) -> String {
        let location = loginLocation
        _ = try file(at: location)
        return location.displayName
    }

    /// The password is checked even when the keychain is already unlocked.
    public func unlock(_ nameOrPath: String, password: SecretBytes) throws(KeychainError) {
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
    public func keychainIdentity(_ nameOrPath: String) throws(KeychainError) -> UUID {
        try file(at: location(nameOrPath)).uuid
    }

    public func lock(_ nameOrPath: String) throws(KeychainError) {
        let file = try file(at: location(nameOrPath))
        if file.lock() {
            file.database.settleAfterLock()
            emit([.locked(file.location.displayName)])
        }
    }

    /// The last login session ended: every keychain's AfterFirstUnlock copies go, whatever its
    /// lock state (an unlocked keychain keeps them again at its next unlock).
    public func dropSessionSecrets() {
        for file in allOpenFiles { file.sessionSecrets.wipe() }
    }

    public func lockAll() {
        let locked = allOpenFiles.filter { $0.lock() }
        for file in locked { file.database.settleAfterLock() }
        emit(locked.map { .locked($0.location.displayName) })
    }

    /// Every open keychain's SQLite page caches given back to malloc (`releasePageCaches`): the
    /// daemon's trim half a second after the last call, before malloc returns its free heap.
    public func releasePageCaches() {
        for file in allOpenFiles { file.database.releasePageCaches() }
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

    public func isLocked(_ nameOrPath: String) throws(KeychainError) -> Bool {
        try file(at: location(nameOrPath)).isLocked
    }

    /// Works while locked and leaves the lock state as it was. A wrong old password is
    /// `errSecAuthFailed` and changes nothing.
    public func changePassword(_ nameOrPath: String, old: SecretBytes, new: SecretBytes) throws(KeychainError) {
        try file(at: location(nameOrPath)).changePassword(old: old, new: new, kdf: kdf)
    }

    /// `GetInfo`: works while locked.
    public func info(_ nameOrPath: String) throws(KeychainError) -> WireDictionary {
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
    public func setSettings(_ nameOrPath: String, _ settings: WireDictionary) throws(KeychainError) {
        try file(at: location(nameOrPath)).updateSettings(settings)
    }

    /// Runs a create, delete or settings change alone, then sends the events for what it changed:
    /// the keychains it made or removed (which `change` records), then the default keychain and
    /// the search list.
    func administering<T>(
        _ change: (inout [KeychainLifecycleEvent]) throws(KeychainError) -> T
    ) throws(KeychainError) -> T {
        var lifecycle: [KeychainLifecycleEvent] = []
        var events: [KeychainEvent] = []
        // Events go out after the lock is released, so a handler may call back into the store;
        // a keychain made or removed is announced even when a later step of the call failed.
        defer {
            emit(lifecycle)
            emit(events)
        }
        administration.lock()
        defer { administration.unlock() }
        // A damaged default or settings file must not block creating or deleting keychains;
        // it only means no event can describe it.
        let defaultBefore = (try? defaultLocation())?.displayName
        let listBefore = try? userSettings.read().settings.searchList
        let result = try change(&lifecycle)
        let defaultAfter = (try? defaultLocation())?.displayName
        let listAfter = try? userSettings.read().settings.searchList
        if defaultAfter != defaultBefore { events.append(.defaultKeychainChanged(defaultAfter ?? "")) }
        if let listAfter, listAfter != listBefore { events.append(.searchListChanged(listAfter)) }
        return result
    }
}
