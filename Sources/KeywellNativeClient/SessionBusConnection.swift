import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// The one session-bus connection every `KeywellClient()` without its own connection shares.
/// It only makes calls (`DBusCallConnection`: no I/O thread), so that a short-lived program such
/// as `keywell` pays for its one call and not for a serving connection's set-up.
///
/// Opened on first use, not at load time, so that linking the library costs nothing; reopened
/// when the bus dropped it (a restarted session bus), and never cached as a failure, so a
/// program that started before the bus recovers once the bus is there.
enum SessionBusConnection {
    private static let lock = ConditionLock()
    nonisolated(unsafe) private static var cached: DBusCallConnection?

    static func get() throws(KeychainError) -> DBusCallConnection {
        lock.lock()
        defer { lock.unlock() }
        if let cached, cached.isConnected { return cached }
        cached = nil
        do {
            let connection = try DBusCallConnection.sessionBus()
            cached = connection
            return connection
        } catch {
            throw KeychainError(SecStatus.notAvailable, detail: "session bus: \(error)")
        }
    }
}
