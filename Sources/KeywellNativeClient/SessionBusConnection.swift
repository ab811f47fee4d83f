import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// The session-bus connections clients without a connection of their own share: one
/// `DBusConnection` for `KeywellClient()`, one call-only connection (no I/O thread) for
/// `KeywellClient.shortLived`.
///
/// Opened on first use, not at load time, so that linking the library costs nothing; reopened
/// when the bus dropped it (a restarted session bus), and never cached as a failure, so a
/// program that started before the bus recovers once the bus is there.
enum SessionBusConnection {
    private static let lock = ConditionLock()
    nonisolated(unsafe) private static var cached: DBusConnection?
    nonisolated(unsafe) private static var cachedCallOnly: DBusCallConnection?

    static func get() throws(KeychainError) -> DBusConnection {
        lock.lock()
        defer { lock.unlock() }
        if let cached, cached.isConnected { return cached }
        cached = nil
        do {
            let connection = try DBusConnection.sessionBus()
            cached = connection
            return connection
        } catch {
            throw KeychainError(SecStatus.notAvailable, detail: "session bus: \(error)")
        }
    }

    static func callOnly() throws(KeychainError) -> DBusCallConnection {
        lock.lock()
        defer { lock.unlock() }
        if let cachedCallOnly, cachedCallOnly.isConnected { return cachedCallOnly }
        cachedCallOnly = nil
        do {
            let connection = try DBusCallConnection.sessionBus()
            cachedCallOnly = connection
            return connection
        } catch {
            throw KeychainError(SecStatus.notAvailable, detail: "session bus: \(error)")
        }
    }
}
