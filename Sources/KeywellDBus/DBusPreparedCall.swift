import CDBus

/// A method call built ahead of its sending. With `DBusConnection.send(_:timeout:)` and
/// `DBusReceivedReply`, a caller can time a call's round trip apart from building the call and
/// reading its answer: keywell-bench holds each call to a Ping this way, since a Ping has no
/// arguments to write and none to read (docs/benchmarks.md, "What a row times").
public struct DBusPreparedCall: Sendable {
    let message: MessageRef
}

/// A reply as it arrived: libdbus has read and validated it, nothing is decoded yet.
public struct DBusReceivedReply: Sendable {
    let message: MessageRef

    /// The reply's values; an error reply throws its error.
    public func arguments() throws(DBusError) -> [DBusValue] {
        if message.type == MessageType.error { throw message.asError() }
        return try message.arguments()
    }
}

extension DBusConnection {
    /// Builds a method call without sending it; names and arguments are checked as `call` checks them.
    public func prepareCall(destination: String?, path: String, interface: String?, member: String,
                            arguments: [DBusValue] = [], autoStart: Bool = true) throws(DBusError) -> DBusPreparedCall {
        DBusPreparedCall(message: try MessageRef.methodCall(destination: destination, path: path, interface: interface,
                                                            member: member, arguments: arguments, autoStart: autoStart))
    }

    /// A `Peer.Ping` of `destination`, built without sending it.
    public func preparePing(_ destination: String, path: String = "/") throws(DBusError) -> DBusPreparedCall {
        try prepareCall(destination: destination, path: path, interface: StandardInterface.peer, member: StandardInterface.ping)
    }

    /// Sends a prepared call and waits for its reply, undecoded. A call is sent once: libdbus
    /// gives it its serial as it leaves, and a second send would reuse it.
    public func send(_ call: DBusPreparedCall, timeout: Duration = .seconds(25)) throws(DBusError) -> DBusReceivedReply {
        guard dbus_message_get_serial(call.message.pointer) == 0 else { throw .failed("A prepared call is sent once") }
        return DBusReceivedReply(message: try sendAndWait(call.message, timeout: timeout))
    }
}
