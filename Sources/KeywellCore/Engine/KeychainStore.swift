import Foundation
import KeywellProtocol
import KeywellSystem
import Logging

/// All of one user's keychains: the engine behind the native API. Thread-safe.
///
/// Keychains are open (one SQLite connection each) from first use on; lock state is in memory only.
/// Three parts with one job each: this type works on items in open keychains, their lock state,
/// and sends events; `OpenKeychains` (Registry/) finds, opens, creates and deletes keychain files
/// and keeps the user's settings (search list, default); `PathChangeWatch` (Watch/) says, from
/// inotify, whether a file may have changed behind its back. The registry's calls are offered
/// here under their public names (`Registry/KeychainStore+Keychains.swift`).
public final class KeychainStore: Sendable {
    public let paths: KeywellPaths
    let kdf: KDFParameters
    let logger: Logger
    /// Which keychains exist and which are open (`Registry/OpenKeychains.swift`).
    let keychains: OpenKeychains
    /// The guessing throttle every password check through `locking` goes under.
    let passwordThrottle: PasswordThrottle
    private let eventHandler = Protected<(@Sendable (KeychainEvent) -> Void)?>(nil)
    /// The last name resolved and its location: a face's hot path names the same keychain call
    /// after call, and resolving builds its path anew (the resolver's folder never changes).
    /// Matched byte for byte: two paths Swift finds equal (é in one code point or two) are two files.
    private let lastLocation = Protected<(name: String, location: KeychainLocation)?>(nil)

    public init(
        paths: KeywellPaths, kdf: KDFParameters = .default, throttleUnit: Duration = PasswordThrottle.defaultUnit,
        logger: Logger = Logger(label: "keywell.core")
    ) throws(KeychainError) {
        guard paths.keychainsDirectory.path.hasPrefix("/"), paths.configDirectory.path.hasPrefix("/") else {
            throw .param("keychain and config folders must be absolute paths")
        }
        guard kdf.isUsable else { throw .param("unusable key-derivation parameters") }
        Sodium.ensureInitialized()
        self.paths = paths
        self.kdf = kdf
        self.logger = logger
        passwordThrottle = PasswordThrottle(unit: throttleUnit)
        keychains = OpenKeychains(paths: paths, kdf: kdf, logger: logger)
        // The registry's events reach the same receivers, in the order it sends them.
        keychains.events = OpenKeychains.RegistryEvents(
            keychains: { [weak self] events in self?.emit(events) },
            state: { [weak self] events in self?.emit(events) })
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

    // MARK: The registry's calls, under the names the engine's calls use

    var resolver: KeychainResolver { keychains.resolver }
    var userSettings: UserSettingsFile { keychains.userSettings }
    var changes: PathChangeWatch { keychains.changes }

    func location(_ nameOrPath: String) throws(KeychainError) -> KeychainLocation {
        if let known = lastLocation.withLock({ last in last.flatMap { $0.name.utf8.elementsEqual(nameOrPath.utf8) ? $0.location : nil } }) { return known }
        let location = try keychains.location(nameOrPath)
        lastLocation.withLock { $0 = (nameOrPath, location) }
        return location
    }

    var loginLocation: KeychainLocation { keychains.loginLocation }

    /// The open keychain at `location`; `errSecNoSuchKeychain` when there is no file.
    func file(at location: KeychainLocation) throws(KeychainError) -> KeychainFile {
        try keychains.file(at: location)
    }

    /// The open keychain at `location`, or nil when there is no file (`OpenKeychains.existingFile`).
    func existingFile(at location: KeychainLocation) throws(KeychainError) -> KeychainFile? {
        try keychains.existingFile(at: location)
    }

    func fileIdentity(at location: KeychainLocation) throws(KeychainError) -> FileIdentity? {
        try keychains.fileIdentity(at: location)
    }

    func forget(_ location: KeychainLocation) {
        keychains.forget(location)
    }

    var allOpenFiles: [KeychainFile] { keychains.allOpenFiles }

    func defaultLocation() throws(KeychainError) -> KeychainLocation? {
        try keychains.defaultLocation()
    }
}
