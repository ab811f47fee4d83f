import CDBus
import KeywellSystem

extension DBusConnection {
    /// The kernel's record of the process at the other end of this connection's socket.
    /// `pinning`: with a pidfd (owned by the caller) and the security label.
    public func peerCredentials(pinning: Bool = true) -> PeerCredentials? {
        socketDescriptor.flatMap { PeerCredentials.of(socket: $0, pinning: pinning) }
    }

    /// The connection's socket, still owned by the connection; nil when it has none.
    public var socketDescriptor: Int32? {
        var fd: Int32 = -1
        guard dbus_connection_get_socket(raw, &fd) != 0, fd >= 0 else { return nil }
        return fd
    }
}
