import KeywellAPI
import KeywellDBus
@_exported import KeywellProtocol
import KeywellSystem

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One keychain as `GetInfo` describes it (docs/native-api.md "GetInfo keys").
public struct KeychainInfo: Sendable, Equatable, Hashable {
    /// The name for keychains in the keychains folder, else the absolute path.
    public var name: String
    /// The file's absolute path.
    public var path: String
    public var locked: Bool
    public var itemCount: Int
    public var lockOnSleep: Bool
    /// Keywell's own: locks when the user's screen locks.
    public var lockOnScreenLock: Bool
    /// Idle seconds before the keychain locks itself; 0 = never.
    public var lockAfterSeconds: UInt32
    public var isDefault: Bool
    public var isLogin: Bool
    /// New items are to trust only their creator; recorded, not yet enforced (docs/access-control.md).
    public var enforceAccess: Bool

    public init(name: String, path: String, locked: Bool, itemCount: Int, lockOnSleep: Bool,
                lockAfterSeconds: UInt32, isDefault: Bool, isLogin: Bool, enforceAccess: Bool = false,
                lockOnScreenLock: Bool = false) {
        self.name = name
        self.path = path
        self.locked = locked
        self.itemCount = itemCount
        self.lockOnSleep = lockOnSleep
        self.lockOnScreenLock = lockOnScreenLock
        self.lockAfterSeconds = lockAfterSeconds
        self.isDefault = isDefault
        self.isLogin = isLogin
        self.enforceAccess = enforceAccess
    }
}

/// Keywell's native API (`org.keywell.Keychain1`), one method per D-Bus method, for Keywell's
/// own tools. Every failure is a `KeychainError` carrying the OSStatus: the daemon's own error,
/// `errSecNotAvailable` when the bus or the daemon cannot be reached (or a call times out),
/// `errSecIO` for a reply of an unexpected shape.
///
/// Keychain arguments are names (files in the keychains folder) or absolute paths, exactly as
/// the daemon takes them. The daemon is started by D-Bus activation on the first call.
/// Safe to use from any number of threads at once.
public final class KeywellClient: Sendable {
    /// Long enough for D-Bus activation of the daemon on the first call (the bus allows 25 s).
    public static let defaultTimeout: Duration = .seconds(30)

    /// nil: a process-wide session-bus connection, opened on first use.
    private let connection: DBusConnection?
    /// Without a connection of its own: the call-only session-bus connection instead of the
    /// serving one.
    private let callsOnly: Bool
    private let timeout: Duration

    /// - Parameter connection: the bus to talk on; nil for the session bus (shared by all
    ///   clients made without one, opened lazily, reopened if the bus drops it).
    public init(connection: DBusConnection? = nil, timeout: Duration = KeywellClient.defaultTimeout) {
        self.connection = connection
        self.callsOnly = false
        self.timeout = timeout
    }

    private init(callsOnlyWithTimeout timeout: Duration) {
        connection = nil
        callsOnly = true
        self.timeout = timeout
    }

    /// The client on the session bus.
    public static let shared = KeywellClient()

    /// The client on the session bus for a short-lived program that calls from one thread (the
    /// `keywell` command): its connection starts no I/O thread (`DBusCallConnection`), and calls
    /// from several threads take turns. Opened on the first call, like `shared`'s.
    public static let shortLived = KeywellClient(callsOnlyWithTimeout: KeywellClient.defaultTimeout)

    @TaskLocal private static var taskDefault: KeywellClient?

    /// The client the Apple-shaped functions (`SecItemAdd`, `SecKeychainUnlock`, …) use:
    /// `shared`, unless `withDefault` replaced it for the running task.
    public static var `default`: KeywellClient { taskDefault ?? shared }

    /// Runs `body` with `client` as `KeywellClient.default` for this task and the tasks it
    /// creates, e.g. to point SecItem code at a test's private bus.
    public static func withDefault<R>(_ client: KeywellClient, _ body: () throws -> R) rethrows -> R {
        try $taskDefault.withValue(client, operation: body)
    }

    public static func withDefault<R>(_ client: KeywellClient, _ body: () async throws -> R) async rethrows -> R {
        try await $taskDefault.withValue(client, operation: body)
    }

    // MARK: Items

    /// `Add`: the result holds what the `r_*` keys asked for (`{}` without any).
    @discardableResult
    public func add(_ attributes: WireDictionary) throws(KeychainError) -> WireDictionary {
        let reply = try callWipingSecrets(.add, [attributes])
        return try WireCodec.replyDictionary(reply.first, of: .add)
    }

    /// `CopyMatching`: one dictionary per match; no match is `errSecItemNotFound`.
    public func copyMatching(_ query: WireDictionary) throws(KeychainError) -> [WireDictionary] {
        let reply = try call(.copyMatching, [WireCodec.dbusDictionary(query)])
        guard let first = reply.first, let dictionaries = first.arrayElements else {
            throw WireCodec.unexpectedReply(.copyMatching, reply.first)
        }
        var results: [WireDictionary] = []
        results.reserveCapacity(dictionaries.count)
        for dictionary in dictionaries {
            results.append(try WireCodec.replyDictionary(dictionary, of: .copyMatching))
        }
        return results
    }

    /// `Update`: changes every match.
    public func update(_ query: WireDictionary, attributes: WireDictionary) throws(KeychainError) {
        _ = try callWipingSecrets(.update, [query, attributes])
    }

    /// `Delete`: deletes every match.
    public func delete(_ query: WireDictionary) throws(KeychainError) {
        _ = try call(.delete, [WireCodec.dbusDictionary(query)])
    }

    // MARK: Keychains

    /// `CreateKeychain`: returns the new file's absolute path. The keychain is unlocked.
    @discardableResult
    public func createKeychain(_ name: String, password: SecretBytes) throws(KeychainError) -> String {
        try string(from: call(.createKeychain, sending: [password]) { [.string(name), $0[0]] }, .createKeychain)
    }

    public func deleteKeychain(_ name: String) throws(KeychainError) {
        _ = try call(.deleteKeychain, [.string(name)])
    }

    /// Every keychain the user has (the folder, plus path-addressed ones in the search list).
    public func listKeychains() throws(KeychainError) -> [String] {
        try strings(from: call(.listKeychains, []), .listKeychains)
    }

    /// The search list (what `security list-keychains` prints).
    public func searchList() throws(KeychainError) -> [String] {
        try strings(from: call(.getSearchList, []), .getSearchList)
    }

    public func setSearchList(_ keychains: [String]) throws(KeychainError) {
        _ = try call(.setSearchList, [.stringArray(keychains)])
    }

    /// `errSecNoDefaultKeychain` when there is none.
    public func defaultKeychain() throws(KeychainError) -> String {
        try string(from: call(.getDefaultKeychain, []), .getDefaultKeychain)
    }

    public func setDefaultKeychain(_ name: String) throws(KeychainError) {
        _ = try call(.setDefaultKeychain, [.string(name)])
    }

    /// `errSecNoSuchKeychain` until `login` exists.
    public func loginKeychain() throws(KeychainError) -> String {
        try string(from: call(.getLoginKeychain, []), .getLoginKeychain)
    }

    /// A wrong password is `errSecAuthFailed`, also for an unlocked keychain.
    public func unlock(_ name: String, password: SecretBytes) throws(KeychainError) {
        _ = try call(.unlock, sending: [password]) { [.string(name), $0[0]] }
    }

    public func lock(_ name: String) throws(KeychainError) {
        _ = try call(.lock, [.string(name)])
    }

    public func lockAll() throws(KeychainError) {
        _ = try call(.lockAll, [])
    }

    /// Leaves the lock state as it was.
    public func changePassword(_ name: String, oldPassword: SecretBytes, newPassword: SecretBytes) throws(KeychainError) {
        _ = try call(.changePassword, sending: [oldPassword, newPassword]) { [.string(name), $0[0], $0[1]] }
    }

    /// Works while locked.
    public func info(_ name: String) throws(KeychainError) -> KeychainInfo {
        let reply = try call(.getInfo, [.string(name)])
        let info = try WireCodec.replyDictionary(reply.first, of: .getInfo)
        func field<T>(_ key: String, _ extract: (WireValue) -> T?) throws(KeychainError) -> T {
            guard let value = info[key], let typed = extract(value) else {
                throw KeychainError(SecStatus.io, detail: "\(NativeMethod.getInfo.name) reply without a valid \(key)")
            }
            return typed
        }
        return KeychainInfo(
            name: try field(KeychainInfoKey.name, \.stringValue),
            path: try field(KeychainInfoKey.path, \.stringValue),
            locked: try field(KeychainInfoKey.locked, \.boolValue),
            itemCount: try field(KeychainInfoKey.itemCount) { $0.integerValue.flatMap { Int(exactly: $0) } },
            lockOnSleep: try field(KeychainInfoKey.lockOnSleep, \.boolValue),
            lockAfterSeconds: try field(KeychainInfoKey.lockAfterSeconds) { $0.integerValue.flatMap { UInt32(exactly: $0) } },
            isDefault: try field(KeychainInfoKey.isDefault, \.boolValue),
            isLogin: try field(KeychainInfoKey.isLogin, \.boolValue),
            enforceAccess: try field(KeychainInfoKey.enforceAccess, \.boolValue),
            // A daemon older than the setting does not send it.
            lockOnScreenLock: info[KeychainInfoKey.lockOnScreenLock]?.boolValue ?? false)
    }

    /// Changes only the settings given; `lockAfterSeconds` 0 = never.
    public func setSettings(_ name: String, lockOnSleep: Bool? = nil, lockAfterSeconds: UInt32? = nil,
                            enforceAccess: Bool? = nil, lockOnScreenLock: Bool? = nil) throws(KeychainError) {
        var settings: [String: DBusValue] = [:]
        if let enforceAccess { settings[KeychainInfoKey.enforceAccess] = .bool(enforceAccess) }
        if let lockOnSleep { settings[KeychainInfoKey.lockOnSleep] = .bool(lockOnSleep) }
        if let lockOnScreenLock { settings[KeychainInfoKey.lockOnScreenLock] = .bool(lockOnScreenLock) }
        if let lockAfterSeconds { settings[KeychainInfoKey.lockAfterSeconds] = .uint32(lockAfterSeconds) }
        _ = try call(.setSettings, [.string(name), .stringVariantDict(settings)])
    }

    /// Keywell's own: the daemon writes a consistent copy of the keychain to `path` (absolute),
    /// refusing an existing file unless `replace` (docs/cli.md, "Backing up").
    public func backupKeychain(_ name: String, to path: String, replace: Bool) throws(KeychainError) {
        _ = try call(.backupKeychain, [.string(name), .string(path), .bool(replace)])
    }

    /// Keywell's own: installs the keychain file at `path` (absolute) as keychain `name`,
    /// refusing an existing keychain unless `replace`. Returns the new keychain's path.
    public func restoreKeychain(from path: String, as name: String, replace: Bool) throws(KeychainError) -> String {
        let reply = try call(.restoreKeychain, [.string(path), .string(name), .bool(replace)])
        guard let installed = reply.first?.stringValue else {
            throw KeychainError(SecStatus.io, detail: "\(NativeMethod.restoreKeychain.name) reply without a path")
        }
        return installed
    }

    /// Keywell's own: imports gnome-keyring / libsecret keyring files (docs/migration.md).
    /// `keyring` empty is every keyring; `password` empty tries only what needs none. One
    /// `a{sv}` report per keyring file.
    public func migrateKeyrings(_ keyring: String, password: SecretBytes) throws(KeychainError) -> [[String: DBusValue]] {
        try dictionaries(try call(.migrateKeyrings, sending: [password]) { [.string(keyring), $0[0]] }.first, in: .migrateKeyrings)
    }

    /// Keywell's own: what came from which keyring file, when, how many items.
    public func migrationStatus() throws(KeychainError) -> [[String: DBusValue]] {
        try dictionaries(try call(.getMigrationStatus, []).first, in: .getMigrationStatus)
    }

    /// Keywell's own: the keychain as a gnome-keyring keyring file at `path` (absolute).
    /// The items written, and the ThisDeviceOnly items left out (they stay on this machine).
    @discardableResult
    public func exportGnomeKeyring(
        _ name: String, to path: String, password: SecretBytes, replace: Bool
    ) throws(KeychainError) -> (items: Int, thisDeviceOnly: Int) {
        let reply = try call(.exportGnomeKeyring, sending: [password]) { [.string(name), .string(path), $0[0], .bool(replace)] }
        return try Self.exportCounts(reply, .exportGnomeKeyring)
    }

    /// Keywell's own: tells keywelld the graphical session's display (only `DISPLAY`,
    /// `WAYLAND_DISPLAY`, `XAUTHORITY`), for every later dialog (docs/prompts.md).
    public func setSessionDisplay(_ environment: [String: String]) throws(KeychainError) {
        _ = try call(.setSessionDisplay, [.stringStringDict(environment)])
    }

    private func dictionaries(_ value: DBusValue?, in method: NativeMethod) throws(KeychainError) -> [[String: DBusValue]] {
        guard let elements = value?.arrayElements else { throw KeychainError(SecStatus.io, detail: "\(method.name) reply is not an array") }
        var result: [[String: DBusValue]] = []
        for element in elements {
            guard case .dictionary(_, _, let entries) = element else { throw KeychainError(SecStatus.io, detail: "\(method.name) reply is damaged") }
            var dictionary: [String: DBusValue] = [:]
            for entry in entries {
                if let key = entry.key.stringValue { dictionary[key] = entry.value.unwrappingVariants }
            }
            result.append(dictionary)
        }
        return result
    }

    // MARK: Transport

    /// Opens the connection now, for a short-lived program with work to do before its first
    /// call (git's helper reading its request): on the direct socket the handshake leaves too,
    /// and keywelld takes the connection and answers it meanwhile instead of after
    /// (docs/performance.md, "git's helper from exec to exit"). A failure is left for that call.
    public func connectAhead() {
        guard callsOnly, let connection = try? SessionBusConnection.callOnly() else { return }
        connection.sendHandshakeAhead()
    }

    func call(_ method: NativeMethod, _ arguments: [DBusValue], timeout callTimeout: Duration? = nil) throws(KeychainError) -> [DBusValue] {
        let timeout = callTimeout ?? self.timeout
        let callOnly = callsOnly ? try SessionBusConnection.callOnly() : nil
        let bus: DBusConnection?
        if callOnly != nil { bus = nil } else if let connection { bus = connection } else { bus = try SessionBusConnection.get() }
        do throws(DBusError) {
            if let callOnly {
                return try callOnly.call(destination: KeywellNames.busName, path: KeywellNames.objectPath,
                                         interface: KeywellNames.interface, member: method.name, arguments: arguments, timeout: timeout)
            }
            guard let bus else { throw DBusError.disconnected() }
            return try bus.call(destination: KeywellNames.busName, path: KeywellNames.objectPath,
                                interface: KeywellNames.interface, member: method.name, arguments: arguments, timeout: timeout)
        } catch {
            throw DBusMapping.keychainError(error)
        }
    }

    /// Sends `secrets` as `ay` arguments (`arguments` places them). DBusValue holds an array, so
    /// each secret is copied once out of its locked memory for the message; that copy is wiped
    /// when the call returns (libdbus's own copy in the message buffer is out of reach).
    func call(_ method: NativeMethod, sending secrets: [SecretBytes], timeout: Duration? = nil,
              _ arguments: ([DBusValue]) -> [DBusValue]) throws(KeychainError) -> [DBusValue] {
        var copies = secrets.map { secret in secret.withUnsafeBytes { [UInt8]($0) } }
        defer { for index in copies.indices { PasswordBytes.wipe(&copies[index]) } }
        return try sendPlaced(method, copies, timeout, arguments)
    }

    /// Separate so that the arguments are released before the caller wipes `copies`.
    private func sendPlaced(_ method: NativeMethod, _ copies: [[UInt8]], _ timeout: Duration?,
                            _ arguments: ([DBusValue]) -> [DBusValue]) throws(KeychainError) -> [DBusValue] {
        try call(method, arguments(copies.map { .bytes($0) }), timeout: timeout)
    }

    /// Sends dictionaries that may hold a secret (`v_Data`) and overwrites the copies made
    /// for the message once the call is over (the caller's own Data is the caller's).
    private func callWipingSecrets(_ method: NativeMethod, _ dictionaries: [WireDictionary]) throws(KeychainError) -> [DBusValue] {
        var secrets: [[UInt8]] = []
        defer { for index in secrets.indices { PasswordBytes.wipe(&secrets[index]) } }
        return try sendDictionaries(method, dictionaries, &secrets)
    }

    /// Separate so that the arguments are released before the caller wipes `secrets`.
    private func sendDictionaries(_ method: NativeMethod, _ dictionaries: [WireDictionary],
                                  _ secrets: inout [[UInt8]]) throws(KeychainError) -> [DBusValue] {
        var arguments: [DBusValue] = []
        for dictionary in dictionaries { arguments.append(DBusMapping.dbusDictionary(dictionary, secrets: &secrets)) }
        return try call(method, arguments)
    }

    private func string(from reply: [DBusValue], _ method: NativeMethod) throws(KeychainError) -> String {
        guard let text = reply.first?.stringValue else {
            throw WireCodec.unexpectedReply(method, reply.first)
        }
        return text
    }

    private func strings(from reply: [DBusValue], _ method: NativeMethod) throws(KeychainError) -> [String] {
        guard let list = reply.first?.stringArrayValue else {
            throw WireCodec.unexpectedReply(method, reply.first)
        }
        return list
    }
}
