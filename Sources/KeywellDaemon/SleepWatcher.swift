import Foundation
import KeywellCore
import KeywellDBus
import KeywellSystem
import Logging

/// Locks the keychains set to lock on sleep when logind announces sleep (`PrepareForSleep(true)`
/// on the system bus). While awake it holds a logind "delay" inhibitor, so the machine waits
/// (up to logind's InhibitDelayMaxSec) until the keys are gone before it sleeps.
///
/// The system bus is `DBUS_SYSTEM_BUS_ADDRESS`, else `/run/dbus/system_bus_socket` when it
/// exists; without one (containers, CI) the daemon carries on without lock-on-sleep, and says
/// so once. The same connection carries logind's screen `Lock` signals (`ScreenLockWatcher`).
///
/// Any connection on the system bus may send a signal straight to this one, with any path,
/// interface and member, so `PrepareForSleep` counts only when its sender is the unique name
/// that owns `org.freedesktop.login1` right now (`NameOwnerTracker`).
final class SleepWatcher: Sendable {
    private static let login1 = "org.freedesktop.login1"
    private static let login1Path = "/org/freedesktop/login1"
    private static let managerInterface = "org.freedesktop.login1.Manager"

    private let store: KeychainStore
    private let logger: Logger
    private let screenLock: ScreenLockWatcher
    private let state = Protected(State())

    private struct State {
        var connection: DBusConnection?
        var inhibitor: Int32 = -1
        var logind: NameOwnerTracker?
    }

    init(store: KeychainStore, screenLock: ScreenLockWatcher, logger: Logger) {
        self.store = store
        self.screenLock = screenLock
        self.logger = logger
    }

    static func systemBusAddress(environment: [String: String]) -> String? {
        if let address = environment["DBUS_SYSTEM_BUS_ADDRESS"], !address.isEmpty { return address }
        let standard = "/run/dbus/system_bus_socket"
        return access(standard, F_OK) == 0 ? "unix:path=" + standard : nil
    }

    /// Connects in the background (never on the start-up path).
    func start(environment: [String: String]) {
        guard let address = Self.systemBusAddress(environment: environment) else {
            // At the normal level: a user who set lock on sleep should learn why it never happens.
            logger.info("no system bus (DBUS_SYSTEM_BUS_ADDRESS unset, no /run/dbus/system_bus_socket): lock on sleep and lock on logind's screen lock are off")
            return
        }
        startDetachedThread(name: "sleep-watcher", stackSize: 256 << 10) { [self] in connect(to: address) }
    }

    private func connect(to address: String) {
        do {
            let connection = try DBusConnection(address: address)
            let logind = try NameOwnerTracker(Self.login1, on: connection)
            state.withLock { $0.logind = logind }
            try connection.addMatch(DBusMatchRule(sender: Self.login1, path: Self.login1Path, interface: Self.managerInterface,
                                                  member: "PrepareForSleep")) { [weak self] signal in
                guard let self, let sleeping = signal.arguments.first?.boolValue else { return }
                guard isFromLogind(signal) else {
                    // Debug only: anyone on the system bus could flood a louder log.
                    logger.debug("ignored PrepareForSleep from \(signal.sender), which does not own \(Self.login1)")
                    return
                }
                sleeping ? prepareForSleep() : resumed()
            }
            try screenLock.watchLogind(on: connection, logind: logind)
            state.withLock { $0.connection = connection }
            takeInhibitor()
            logger.debug("watching logind for sleep")
        } catch {
            logger.info("no lock on sleep or on logind's screen lock: the system bus at \(address) is not usable (\(error.message))")
        }
    }

    private func isFromLogind(_ signal: DBusSignal) -> Bool {
        state.withLock { $0.logind }?.isOwner(signal.sender) ?? false
    }

    private func prepareForSleep() {
        let locked = store.locking.lockForSleep()
        if !locked.isEmpty { logger.info("locked for sleep: \(locked.joined(separator: ", "))") }
        releaseInhibitor()
    }

    private func resumed() {
        takeInhibitor()
    }

    private func takeInhibitor() {
        guard let connection = state.withLock({ $0.inhibitor < 0 ? $0.connection : nil }) else { return }
        do {
            let reply = try connection.call(destination: Self.login1, path: Self.login1Path, interface: Self.managerInterface,
                                            member: "Inhibit",
                                            arguments: ["sleep", "keywelld", "Lock keychains before sleep", "delay"],
                                            timeout: .seconds(5))
            guard let fd = reply.first?.unixFDValue else { return }
            let previous = state.withLock { state -> Int32 in
                defer { state.inhibitor = fd }
                return state.inhibitor
            }
            if previous >= 0 { close(previous) }
        } catch {
            logger.debug("no sleep inhibitor (\(error.message)); locking on sleep without delaying it")
        }
    }

    private func releaseInhibitor() {
        let fd = state.withLock { state -> Int32 in
            defer { state.inhibitor = -1 }
            return state.inhibitor
        }
        if fd >= 0 { close(fd) }
    }
}
