import KeywellDBus
import KeywellProtocol
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// The session-bus connections clients without a connection of their own share: one
/// `DBusConnection` for `KeywellClient()`, one call-only connection (no I/O thread) for
/// `KeywellClient.shortLived`.
///
/// Opened on first use, not at load time, so that linking the library costs nothing; reopened
/// when the bus dropped it (a restarted session bus), and never cached as a failure, so a
/// program that started before the bus recovers once the bus is there.
enum SessionBusConnection {
    private static let shared = CachedConnection<DBusConnection>(isConnected: \.isConnected, open: DBusConnection.sessionBus)
    private static let sharedCallOnly = CachedConnection<DBusCallConnection>(isConnected: \.isConnected, open: openCallOnly)

    static func get() throws(KeychainError) -> DBusConnection { try shared.get() }

    static func callOnly() throws(KeychainError) -> DBusCallConnection { try sharedCallOnly.get() }

    /// The daemon's direct socket when it is there and answers (docs/native-api.md, "The direct
    /// socket"), else the session bus: a daemon not running yet is started by the bus, and the
    /// next client finds its socket. A daemon that turns the first call away unread (full,
    /// stopping) sends it to the bus too.
    private static func openCallOnly() throws(DBusError) -> DBusCallConnection {
        if let path = directSocketPath(),
           let direct = try? DBusCallConnection(directSocket: path, fallbackAddress: DBusConnection.sessionBusAddress()) {
            return direct
        }
        return try DBusCallConnection.sessionBus()
    }

    /// `$XDG_RUNTIME_DIR/keywell/native`; nil without a runtime folder, or with
    /// `KEYWELL_NO_DIRECT_SOCKET` set (tests, and people comparing the two ways).
    static func directSocketPath() -> String? {
        guard getenv("KEYWELL_NO_DIRECT_SOCKET") == nil, let runtime = getenv("XDG_RUNTIME_DIR") else { return nil }
        let folder = String(cString: runtime)
        guard folder.hasPrefix("/") else { return nil }
        return folder + "/" + KeywellNames.runtimeFolder + "/" + KeywellNames.directSocket
    }
}

/// One cached connection of either kind, opened again once it is no longer connected.
private final class CachedConnection<Connection: AnyObject & Sendable>: Sendable {
    private let cached = Protected<Connection?>(nil)
    private let isConnected: @Sendable (Connection) -> Bool
    private let open: @Sendable () throws(DBusError) -> Connection

    init(isConnected: @escaping @Sendable (Connection) -> Bool, open: @escaping @Sendable () throws(DBusError) -> Connection) {
        self.isConnected = isConnected
        self.open = open
    }

    func get() throws(KeychainError) -> Connection {
        // Not a `Result`: its type would be made at run time, a scan of every conformance in
        // the program, in a `keywell` process that makes one call (docs/performance.md).
        var failure: DBusError? = nil
        let connection: Connection? = cached.withLock { cached in
            if let connection = cached, isConnected(connection) { return connection }
            cached = nil
            do throws(DBusError) {
                let connection = try open()
                cached = connection
                return connection
            } catch {
                failure = error
                return nil
            }
        }
        guard let connection else {
            throw KeychainError(SecStatus.notAvailable, detail: "session bus: \(failure ?? .disconnected())")
        }
        return connection
    }
}
