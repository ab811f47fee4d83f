import Foundation
import KeywellProtocol
import Logging
import KeywellSystem

/// All of one user's keychains: the engine behind the native API. Thread-safe.
///
/// Keychains are open (one SQLite connection each) from first use on; lock state is in memory only.
// @unchecked: its state lives in `Protected` values and locked helpers; `administration` serialises keychain creation and removal.
public final class KeychainStore: @unchecked Sendable {
    public let paths: KeywellPaths
    let kdf: KDFParameters
    let logger: Logger
    let resolver: KeychainResolver
    let userSettings: UserSettingsFile

    private let openFiles = Protected<[String: OpenKeychain]>([:])
    /// Lets a call skip re-checking files nothing has touched since the last check.
    let changes = PathChangeWatch()

    private struct OpenKeychain {
        let file: KeychainFile
        /// Its folder reported no change since the file was last checked while this is current.
        var checked: PathChangeWatch.Mark?
    }
    private let eventHandler = Protected<(@Sendable (KeychainEvent) -> Void)?>(nil)
    /// Serialises calls that create or delete keychains or change the settings, so the events
    /// each one sends describe exactly its own change.
    let administration = NSLock()

    public init(
        paths: KeywellPaths, kdf: KDFParameters = .default, logger: Logger = Logger(label: "keywell.core")
    ) throws(KeychainError) {
        guard paths.keychainsDirectory.path.hasPrefix("/"), paths.configDirectory.path.hasPrefix("/") else {
            throw .param("keychain and config folders must be absolute paths")
        }
        guard kdf.isUsable else { throw .param("unusable key-derivation parameters") }
        Sodium.ensureInitialized()
        self.paths = paths
        self.kdf = kdf
        self.logger = logger
        resolver = KeychainResolver(keychainsDirectory: paths.keychainsDirectory.path)
        userSettings = UserSettingsFile(configDirectory: paths.configDirectory.path, logger: logger, changes: changes)
    }

    /// Receives every `KeychainEvent`; set once by the daemon before use. It runs on the thread
    /// that made the change, right after it: hand the event on (to the bus) rather than call
    /// back into the store from it.
    public var onEvent: (@Sendable (KeychainEvent) -> Void)? {
        get { eventHandler.read { $0 } }
        set { eventHandler.withLock { $0 = newValue } }
    }

    func emit(_ events: [KeychainEvent]) {
        guard !events.isEmpty, let handler = onEvent else { return }
        events.forEach(handler)
    }

    // MARK: Finding keychains

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
            if lostUnlocked { emit([.locked(location.displayName)]) }
        }
        return try openFiles.withLock { files throws(KeychainError) -> KeychainFile? in
            if let open = files[location.path] {
                if let identity, open.file.identity.isSameFile(as: identity) {
                    try KeychainFileSet.checkCompanions(of: location.path)
                    files[location.path]?.checked = checked
                    return open.file
                }
                lostUnlocked = !open.file.isLocked
                files[location.path] = nil
            }
            guard identity != nil, try fileIdentity(at: location) != nil else { return nil }
            let file = try KeychainFile(location: location, identity: identity!)
            files[location.path] = OpenKeychain(file: file, checked: checked)
            return file
        }
    }

    /// The open file at `location` when nothing changed since it was last checked.
    private func openAndUnchanged(_ location: KeychainLocation) -> KeychainFile? {
        guard let open = openFiles.withLock({ $0[location.path] }), changes.isUnchanged(since: open.checked) else { return nil }
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
        openFiles.withLock { $0[location.path] = OpenKeychain(file: file, checked: nil) }
        return file
    }

    func forget(_ location: KeychainLocation) {
        openFiles.withLock { $0[location.path] = nil }
    }

    /// Keychains open in this process (every unlocked one is).
    var allOpenFiles: [KeychainFile] {
        openFiles.withLock { $0.values.map(\.file) }.sorted { $0.location.path < $1.location.path }
    }

    /// The default keychain if one is set and its file exists.
    func defaultLocation() throws(KeychainError) -> KeychainLocation? {
        guard let name = try userSettings.read().settings.defaultKeychain,
            let location = try? location(name)
        else { return nil }
        if openAndUnchanged(location) != nil { return location }
        return try fileIdentity(at: location) != nil ? location : nil
    }
}
