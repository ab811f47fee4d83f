import Foundation
import KeywellDBus
import KeywellSystem

/// The connection the service serves on now (it changes when the session bus does).
final class LockedConnection: Sendable {
    private let connection = Protected<DBusConnection?>(nil)

    func get() -> DBusConnection? { connection.withLock { $0 } }
    func set(_ connection: DBusConnection) { self.connection.withLock { $0 = connection } }
}
