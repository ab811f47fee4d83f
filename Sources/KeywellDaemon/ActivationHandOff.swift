import Foundation
import KeywellDBus
import KeywellProtocol

/// A keywelld that a bus started while another instance holds the instance lock.
///
/// The race (issue 3): pam_keywell starts keywelld at login, possibly before any session bus
/// exists; a client's call can make the bus activate a second keywelld before the first has
/// claimed `org.keywell.Keychain` (it is still starting, or has not yet noticed a bus that just
/// appeared). dbus-daemon completes a pending activation as soon as *any* connection owns the
/// name, and ignores an activated child that exits 0 (it then waits for the name, up to its own
/// `service_start_timeout`); a non-zero exit fails the pending calls at once. So this instance
/// waits, bounded, for the name to get an owner and then exits 0; if the lock holder never shows
/// up on this bus, it exits 1 with the usual message and the caller gets a prompt, clear error.
/// A keywelld started by hand does none of this: it is refused at once, as before.
enum ActivationHandOff {
    /// Who started this process, when it was a bus.
    enum Starter: Equatable, CustomStringConvertible {
        /// dbus-daemon's own activation: it sets DBUS_STARTER_ADDRESS for what it spawns.
        case dbusActivation(address: String)
        /// systemd started keywelld.service (`SystemdService=` activation, or default.target):
        /// SYSTEMD_EXEC_PID is this very process, not an ancestor a shell inherited it from.
        case systemd

        var description: String {
            switch self {
            case .dbusActivation: "D-Bus activation"
            case .systemd: "systemd"
            }
        }
    }

    enum Outcome {
        /// The name has an owner now, so the activation that started us is served.
        case served(owner: String)
        /// The holder went away before claiming the name: this instance has the lock now.
        case acquired(InstanceLock)
        /// The bus that started us went away while we waited: its pending calls went with it.
        case busGone
        /// Nobody claimed the name within the wait.
        case timedOut
    }

    /// Long enough for a holder that is starting up, or that just saw the bus appear
    /// (BusSocketWatcher retries at least every 2 s); well below dbus-daemon's 25 s.
    static let patience: Duration = .seconds(10)

    static func starter(environment: [String: String], pid: pid_t = getpid()) -> Starter? {
        if let address = environment["DBUS_STARTER_ADDRESS"], !address.isEmpty {
            return .dbusActivation(address: address)
        }
        if environment["SYSTEMD_EXEC_PID"] == String(pid) { return .systemd }
        return nil
    }

    /// Polls the lock and the name until one of them settles it. A bus that is not reachable
    /// yet is retried until the deadline; one that drops us is gone.
    static func wait(lockPath: String, busAddress: String, timeout: Duration = patience) throws(DaemonError) -> Outcome {
        let deadline = ContinuousClock.now + timeout
        var connection: DBusConnection?
        defer { connection?.close() }
        while true {
            if case .acquired(let lock) = try InstanceLock.acquire(at: lockPath) { return .acquired(lock) }
            if connection == nil { connection = try? DBusConnection(address: busAddress) }
            if let bus = connection {
                do {
                    if let owner = try bus.nameOwner(KeywellNames.busName) { return .served(owner: owner) }
                } catch {
                    if !bus.isConnected { return .busGone }
                }
            }
            guard ContinuousClock.now < deadline else { return .timedOut }
            usleep(50_000)
        }
    }
}

/// Not a failure: another keywelld owns the name on the bus that started this one (so the
/// activation is served), or that bus is gone (nothing left to serve). The process exits 0
/// without a word; only `--verbose` says why.
struct QuietExit: Error, CustomStringConvertible {
    let description: String
}
