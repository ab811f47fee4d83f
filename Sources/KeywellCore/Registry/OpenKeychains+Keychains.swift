import Foundation
import KeywellProtocol
import KeywellSystem

/// Keychain management: create, delete, the list of keychains, the search list and the default.
/// `KeychainStore` offers these under the same names (`KeychainStore+Keychains.swift`).
extension OpenKeychains {
    /// A new keychain, unlocked, not added to the search list, with `label` if given (see
    /// `keychainLabel`). Returns its absolute path.
    func createKeychain(_ nameOrPath: String, password: SecretBytes, label: String? = nil) throws(KeychainError) -> String {
        let location = try location(nameOrPath)
        if let label, label.utf8.count > KeychainStore.labelMaximumBytes || label.utf8.contains(0) {
            throw .param("a keychain label is at most \(KeychainStore.labelMaximumBytes) bytes with no NUL")
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
            if let label { try KeychainStore.writeLabel(label, in: file) }
            logger.debug("created keychain", metadata: ["keychain": "\(location.displayName)"])
            return location.path
        }
    }

    /// Deletes the file; drops the keychain from the search list and, if it was the default,
    /// leaves no default.
    func deleteKeychain(_ nameOrPath: String) throws(KeychainError) {
        let location = try location(nameOrPath)
        try administering { (lifecycle: inout [KeychainLifecycleEvent]) throws(KeychainError) in
            // Only the file's existence and ownership matter: a damaged keychain can be deleted.
            guard try fileIdentity(at: location) != nil else {
                throw KeychainError(SecStatus.noSuchKeychain, detail: location.displayName)
            }
            forget(location)
            for suffix in ["", "-wal", "-shm", "-journal"] {
                if unlink(location.path + suffix) != 0, Errno.current != .noEntry {
                    throw KeychainError(SecStatus.wrPerm, detail: "cannot delete \(location.path + suffix): \(Errno.current.description)")
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
    func listKeychains() throws(KeychainError) -> [String] {
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

    func searchList() throws(KeychainError) -> [String] {
        try userSettings.read().settings.searchList
    }

    /// Keychains need not exist yet (searches skip missing ones). Repeats are dropped. As macOS
    /// does, a list of just `login` while `login` is the default is stored as no list at all, so
    /// it goes on following the default.
    func setSearchList(_ list: [String]) throws(KeychainError) {
        var names: [String] = []
        var seen: Set<ExactText> = []
        for entry in list {
            let name = try location(entry).displayName
            if seen.insert(ExactText(name)).inserted { names.append(name) }
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

    func defaultKeychain() throws(KeychainError) -> String {
        guard let location = try defaultLocation() else { throw KeychainError(SecStatus.noDefaultKeychain) }
        return location.displayName
    }

    /// The keychain must exist.
    func setDefaultKeychain(_ nameOrPath: String) throws(KeychainError) {
        let location = try location(nameOrPath)
        try administering { _ throws(KeychainError) in
            _ = try file(at: location)
            _ = try userSettings.update { $0.defaultKeychain = location.displayName }
        }
    }

    func loginKeychain() throws(KeychainError) -> String {
        let location = loginLocation
        _ = try file(at: location)
        return location.displayName
    }

    /// Runs a create, delete or settings change alone, then sends the events for what it changed:
    /// the keychains it made or removed (which `change` records), then the default keychain and
    /// the search list.
    func administering<T: Sendable>(
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
        return try administration.withLock { _ throws(KeychainError) -> T in
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
}
