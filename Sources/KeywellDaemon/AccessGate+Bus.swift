import KeywellAccess
import KeywellDBus

extension AccessGate {
    /// Follows callers leaving `connection`'s bus (NameOwnerChanged), so that an *Allow* given
    /// to a connection without an identity ends with it (docs/access-control.md). The gate itself
    /// knows no D-Bus: it is told which bus the names are about and who left.
    func watch(_ connection: DBusConnection) throws(DBusError) {
        guard follow(bus: connection) else { return }
        _ = try connection.addMatch(.namesLeft()) { [weak self] signal in
            guard let name = signal.arguments.first?.stringValue, name.hasPrefix(":") else { return }
            self?.connectionLeft(name)
        }
    }
}
