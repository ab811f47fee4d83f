import CDBus
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// A private bus connection that only makes method calls: no I/O thread, no worker pool, no
/// objects, no signals. Each call sends its message and waits for the reply on the calling
/// thread (libdbus's `dbus_connection_send_with_reply_and_block`). For short-lived,
/// single-threaded clients such as the `keywell` command, which make one or two calls and exit:
/// a `DBusConnection` starts its loop thread and its tables first, which costs such a process
/// more than its call (docs/performance.md, "The command line").
///
/// Calls from several threads take turns: when several threads wait in libdbus at once, one
/// of them can miss the reply another thread read for it and wait until its timeout. A program
/// whose threads call at the same time wants a `DBusConnection`.
// @unchecked: libdbus connections are thread-safe once dbus_threads_init_default ran; calls are serialised by `turn`.
public final class DBusCallConnection: @unchecked Sendable {
    private let raw: OpaquePointer
    private let turn = ConditionLock()

    /// A new private connection to `address`, registered with the bus (Hello).
    public init(address: String) throws(DBusError) {
        raw = try openPrivateConnection(address, registerWithBus: true)
    }

    /// A new private connection to the session bus of this process's environment.
    public static func sessionBus() throws(DBusError) -> DBusCallConnection {
        guard let address = DBusConnection.sessionBusAddress() else { throw DBusConnection.noSessionBus }
        return try DBusCallConnection(address: address)
    }

    deinit {
        dbus_connection_close(raw)
        dbus_connection_unref(raw)
    }

    /// True until the bus drops the connection.
    public var isConnected: Bool { dbus_connection_get_is_connected(raw) != 0 }

    /// Calls a method and waits for its reply (the return values, or the error it answered).
    /// Times out with `NoReply` (`error.isTimeout`), as `DBusConnection.call` does.
    public func call(destination: String?, path: String, interface: String?, member: String,
                     arguments: [DBusValue] = [], timeout: Duration = .seconds(25),
                     autoStart: Bool = true) throws(DBusError) -> [DBusValue] {
        let message = try MessageRef.methodCall(destination: destination, path: path, interface: interface, member: member,
                                                arguments: arguments, autoStart: autoStart)
        if dbus_message_contains_unix_fds(message.pointer) != 0, dbus_connection_can_send_type(raw, TypeCode.unixFD) == 0 {
            throw .notSupported("This connection cannot pass file descriptors")
        }
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        turn.lock()
        let reply = dbus_connection_send_with_reply_and_block(raw, message.pointer, Self.milliseconds(timeout), &error)
        turn.unlock()
        guard let reply else { throw takeError(&error) }
        return try MessageRef(owning: reply).arguments()
    }

    /// libdbus takes whole milliseconds in an Int32; longer waits are capped there (24 days).
    static func milliseconds(_ timeout: Duration) -> Int32 {
        let (seconds, attoseconds) = timeout.components
        guard seconds >= 0 else { return 0 }
        guard seconds < Int64(Int32.max / 1000) else { return Int32.max }
        return Int32(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
