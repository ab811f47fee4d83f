import Foundation
import KeywellProtocol
import KeywellSystem
import Logging

/// The registry of one user's keychains: where names and paths lead, which keychain files are
/// open in this process (one `KeychainFile` each, with its lock state), and the user's settings
/// (search list, default). Every look-up checks that the file is still the one opened and still
/// the user's alone, asking the file watcher (`PathChangeWatch`) whether anything could have
/// changed first. It also creates and deletes keychains and keeps the search list and the
/// default (`OpenKeychains+Keychains.swift`), and says whether that list may have changed
/// (`OpenKeychains+Listing.swift`). Thread-safe; `KeychainStore` holds one, works on the files it
/// hands out and forwards the keychain calls to it under their public names.
final class OpenKeychains: Sendable {
    let resolver: KeychainResolver
    let userSettings: UserSettingsFile
    /// Lets a call skip re-checking files nothing has touched since the last check.
    let changes = PathChangeWatch()
    let kdf: KDFParameters
    let logger: Logger
    /// Serialises calls that create or delete keychains or change the settings, so the events
    /// each one sends describe exactly its own change.
    let administration = Protected(())

    /// By path, byte for byte: two spellings of "café" are two files.
    private let openFiles = Protected<[ExactText: OpenKeychain]>([:])
    private let announcer = Protected<RegistryEvents>(RegistryEvents())
    /// The default keychain's name as the settings last gave it, and its location: resolving
    /// the name joins the folder, the name and the extension, three allocations on every call
    /// that finds the default (ReadAlias). The location follows from the name alone, so a name
    /// equal byte for byte gives the same one (docs/performance.md, "The per-call path, counted
    /// again").
    private let lastDefault = Protected<(name: String, location: KeychainLocation)?>(nil)

    /// Where the registry's events go: the store's receivers, set once by the store.
    struct RegistryEvents: Sendable {
        var keychains: @Sendable ([KeychainLifecycleEvent]) -> Void = { _ in }
        var state: @Sendable ([KeychainEvent]) -> Void = { _ in }
    }

    private struct OpenKeychain {
        let file: KeychainFile
        /// Its folder reported no change since the file was last checked while this is current.
        var checked: PathChangeWatch.Mark?
    }

    init(paths: KeywellPaths, kdf: KDFParameters, logger: Logger) {
        resolver = KeychainResolver(keychainsDirectory: paths.keychainsDirectory.path)
        userSettings = UserSettingsFile(configDirectory: paths.configDirectory.path, logger: logger, changes: changes)
        self.kdf = kdf
        self.logger = logger
    }

    /// Receives the keychains made or removed and the state changes (default, search list, a
    /// keychain locked because its file was replaced) on the thread that made them.
    var events: RegistryEvents {
        get { announcer.read { $0 } }
        set { announcer.withLock { $0 = newValue } }
    }

    func emit(_ events: [KeychainLifecycleEvent]) {
        guard !events.isEmpty else { return }
        self.events.keychains(events)
    }

    func emit(_ events: [KeychainEvent]) {
        guard !events.isEmpty else { return }
        self.events.state(events)
    }

    func location(_ nameOrPath: String) throws(KeychainError) -> KeychainLocation {
        try resolver.location(for: nameOrPath)
    }

    var loginLocation: KeychainLocation {
        // "login" is a valid name, so this cannot fail.
        try! resolver.location(for: KeywellNames.loginKeychain)
    }

    /// The open keychain at `location`; `errSecNoSuchKeychain` when there is no file.
    func file(at location: KeychainLocation) throws(KeychainError) -> KeychainFile {
        guard let file = try existingFile(at: location) else {
            throw KeychainError(SecStatus.noSuchKeychain, detail: location.displayName)
        }
        return file
    }

    /// The open keychain at `location`, or nil when there is no file. Every call checks that the
    /// file, and its -wal, -shm and -journal, are still the user's alone and notices a file deleted or replaced behind our back
    /// (looking again only when its folder, or one on the way to it, reported a change since the
    /// last look); the folder is checked when a file is opened (a replaced file is opened, and
    /// checked, anew).
    func existingFile(at location: KeychainLocation) throws(KeychainError) -> KeychainFile? {
        if let file = openAndUnchanged(location) { return file }
        let checked = changes.mark(watching: location.path, edits: false)
        let identity = try KeychainFileSet.check(location.path)
        var lostUnlocked = false
        defer {
            // The key went with the old file: for the daemon that keychain is now locked.
            if lostUnlocked { emit([KeychainEvent.locked(location.displayName)]) }
        }
        return try openFiles.withLock { files throws(KeychainError) -> KeychainFile? in
            if let open = files[location.key] {
                if let identity, open.file.identity.isSameFile(as: identity) {
                    try KeychainFileSet.checkCompanions(of: location.path)
                    files[location.key]?.checked = checked
                    return open.file
                }
                lostUnlocked = !open.file.isLocked
                // The old file's rows must never answer for the new one's (its handle may live on in a call).
                open.file.dropCheckedRows()
                files[location.key] = nil
            }
            guard identity != nil, try fileIdentity(at: location) != nil else { return nil }
            let file = try KeychainFile(location: location, identity: identity!)
            files[location.key] = OpenKeychain(file: file, checked: checked)
            return file
        }
    }

    /// The open file at `location` when nothing changed since it was last checked.
    private func openAndUnchanged(_ location: KeychainLocation) -> KeychainFile? {
        guard let open = openFiles.withLock({ $0[location.key] }), changes.isUnchanged(since: open.checked) else { return nil }
        return open.file
    }

    /// The identity of the keychain file at `location`, nil when there is none; throws when the
    /// file or its folder is not the user's alone.
    func fileIdentity(at location: KeychainLocation) throws(KeychainError) -> FileIdentity? {
        guard try FileSafety.checkDirectory(location.directory, ownedByUser: location.isInKeychainsFolder) else { return nil }
        return try KeychainFileSet.check(location.path)
    }

    /// Registers a keychain this store just created, unlocked with its master key.
    func register(_ location: KeychainLocation, masterKey: SecretBytes) throws(KeychainError) -> KeychainFile {
        guard let identity = try KeychainFileSet.check(location.path) else {
            throw KeychainError(SecStatus.noSuchKeychain, detail: location.displayName)
        }
        let file = try KeychainFile(location: location, identity: identity, masterKey: masterKey)
        // Not marked as checked: the first use looks at the file again and starts watching it.
        openFiles.withLock { $0[location.key] = OpenKeychain(file: file, checked: nil) }
        return file
    }

    func forget(_ location: KeychainLocation) {
        openFiles.withLock { files in
            files[location.key]?.file.sessionSecrets.wipe()
            files[location.key]?.file.dropCheckedRows()
            files[location.key] = nil
        }
    }

    /// Keychains open in this process (every unlocked one is).
    var allOpenFiles: [KeychainFile] {
        openFiles.withLock { $0.values.map(\.file) }.sorted { $0.location.path < $1.location.path }
    }

    /// The default keychain if one is set and its file exists.
    func defaultLocation() throws(KeychainError) -> KeychainLocation? {
        guard let name = try userSettings.read().settings.defaultKeychain,
            let location = resolvedDefault(name)
        else { return nil }
        if openAndUnchanged(location) != nil { return location }
        return try fileIdentity(at: location) != nil ? location : nil
    }

    private func resolvedDefault(_ name: String) -> KeychainLocation? {
        if let kept = lastDefault.withLock({ $0 }), kept.name.isExactly(name) { return kept.location }
        guard let location = try? location(name) else { return nil }
        lastDefault.withLock { $0 = (name, location) }
        return location
    }
}
