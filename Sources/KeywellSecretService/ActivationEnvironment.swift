import Foundation
import KeywellDBus
import Synchronization

/// The session's activation environment, where a desktop exports `DISPLAY` after the daemon
/// started (`dbus-update-activation-environment --systemd`, `systemctl --user import-environment`):
/// systemd's user manager keeps it as its `Environment` property. A plain dbus-daemon keeps its
/// own list but offers no way to read it back, so without systemd this is empty (docs/prompts.md).
enum ActivationEnvironment {
    static func read(from connection: DBusConnection) -> [String: String] {
        do {
            let reply = try connection.call(
                destination: "org.freedesktop.systemd1", path: "/org/freedesktop/systemd1",
                interface: "org.freedesktop.DBus.Properties", member: "Get",
                arguments: [.string("org.freedesktop.systemd1.Manager"), .string("Environment")], timeout: .seconds(2), autoStart: false)
            let lines = reply.first?.unwrappingVariants.arrayElements?.compactMap(\.stringValue) ?? []
            return PrompterChoice.parse(assignments: lines)
        } catch {
            return [:]
        }
    }
}

/// The connection the service serves on now (it changes when the session bus does).
final class LockedConnection: Sendable {
    private let connection = Mutex<DBusConnection?>(nil)

    func get() -> DBusConnection? { connection.withLock { $0 } }
    func set(_ connection: DBusConnection) { self.connection.withLock { $0 = connection } }
}
