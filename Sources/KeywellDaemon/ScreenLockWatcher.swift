import Foundation
import KeywellCore
import KeywellDBus
import KeywellSystem
import Logging

/// Locks the keychains set to lock on screen lock when the user's screen locks (docs/auto-lock.md):
/// - logind's `Lock` signal (`org.freedesktop.login1.Session`, on the system bus) for a session
///   of this user: what `loginctl lock-session` and desktops that lock through logind send. The
///   daemon serves every session of its user (and, started by D-Bus activation, belongs to none),
///   so a session counts when logind says its `User` is the daemon's uid;
/// - `ActiveChanged(true)` of `org.freedesktop.ScreenSaver` or `org.gnome.ScreenSaver` on the
///   session bus: what screen lockers (GNOME Shell, KDE, xfce4-screensaver, …) announce.
/// Each counts only from the current owner of the name it comes from (`NameOwnerTracker`).
final class ScreenLockWatcher: Sendable {
    static let login1 = "org.freedesktop.login1"
    static let sessionInterface = "org.freedesktop.login1.Session"
    static let screenSavers = ["org.freedesktop.ScreenSaver", "org.gnome.ScreenSaver"]

    private let store: KeychainStore
    private let logger: Logger
    private let subscriptions = Protected(Subscriptions())

    private struct Subscriptions {
        /// Kept alive while their connection is the current one.
        var sessionBusTrackers: [NameOwnerTracker] = []
        var sessionBusWatches: [DBusSignalSubscription] = []
        var logindWatch: DBusSignalSubscription?
    }

    init(store: KeychainStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// logind's `Lock` on the system bus; `logind` follows the owner of org.freedesktop.login1.
    func watchLogind(on connection: DBusConnection, logind: NameOwnerTracker) throws(DBusError) {
        let uid = getuid()
        let watch = try connection.addMatch(DBusMatchRule(sender: Self.login1, interface: Self.sessionInterface, member: "Lock")) {
            [weak self] signal in
            guard let self else { return }
            guard logind.isOwner(signal.sender) else {
                // Debug only: anyone on the system bus could flood a louder log.
                logger.debug("ignored Lock from \(signal.sender), which does not own \(Self.login1)")
                return
            }
            guard let user = Self.sessionUser(signal.path, on: connection), user == uid else {
                logger.debug("ignored Lock of \(signal.path), a session of another user")
                return
            }
            screenLocked(by: "logind (\(signal.path))")
        }
        subscriptions.withLock { $0.logindWatch = watch }
    }

    /// The screen savers' `ActiveChanged` on a (new) session bus.
    func watchScreenSavers(on connection: DBusConnection) {
        var trackers: [NameOwnerTracker] = []
        var watches: [DBusSignalSubscription] = []
        do {
            for name in Self.screenSavers {
                let tracker = try NameOwnerTracker(name, on: connection)
                trackers.append(tracker)
                watches.append(try connection.addMatch(DBusMatchRule(interface: name, member: "ActiveChanged")) { [weak self] signal in
                    guard let self, signal.arguments.first?.boolValue == true else { return }
                    guard tracker.isOwner(signal.sender) else {
                        logger.debug("ignored ActiveChanged from \(signal.sender), which does not own \(name)")
                        return
                    }
                    screenLocked(by: name)
                })
            }
            logger.debug("watching the screen savers for screen lock")
        } catch {
            logger.warning("not watching the screen savers on the session bus: \(error.message)")
        }
        let (newTrackers, newWatches) = (trackers, watches)
        let previous = subscriptions.withLock { subscriptions -> [DBusSignalSubscription] in
            defer {
                subscriptions.sessionBusTrackers = newTrackers
                subscriptions.sessionBusWatches = newWatches
            }
            return subscriptions.sessionBusWatches
        }
        previous.forEach { $0.cancel() }
    }

    private func screenLocked(by source: String) {
        let locked = store.locking.lockForScreenLock()
        logger.info("screen locked (\(source))\(locked.isEmpty ? "" : ": locked \(locked.joined(separator: ", "))")")
    }

    /// The uid logind gives as the session's `User` (`(uo)`), nil when it does not answer.
    private static func sessionUser(_ path: String, on connection: DBusConnection) -> uid_t? {
        let reply = try? connection.call(destination: login1, path: path, interface: "org.freedesktop.DBus.Properties",
                                         member: "Get", arguments: [.string(sessionInterface), .string("User")],
                                         timeout: .seconds(5))
        return reply?.first?.unwrappingVariants.structureFields?.first?.uint32Value
    }
}
