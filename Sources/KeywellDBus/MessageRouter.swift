import CDBus

/// Where a connection's incoming messages go, on the loop's leader. Method calls (which the loop
/// takes out of libdbus's queue itself) go to `MethodDispatcher`, which runs the short ones its
/// objects place on the loop and the rest off it; signals reach the delivery queue through a
/// libdbus filter, run during dispatch.
// @unchecked: immutable after init; each part it holds is thread-safe.
final class MessageRouter: @unchecked Sendable {
    /// Weak so that the loop never holds the last reference to the connection.
    private weak let connection: DBusConnection?
    private let registry: ObjectRegistry
    private let loop: ConnectionLoop
    private let subscriptions: SignalSubscriptions
    private let signalLane: SerialLane

    private init(connection: DBusConnection) {
        self.connection = connection
        self.registry = connection.registry
        self.loop = connection.loop
        self.subscriptions = connection.subscriptions
        self.signalLane = connection.signalLane
    }

    /// Installs the signal filter; the returned router takes the method calls.
    static func install(on raw: OpaquePointer, for connection: DBusConnection) -> MessageRouter {
        let router = MessageRouter(connection: connection)
        let userData = Unmanaged.passRetained(router).toOpaque()
        let added = dbus_connection_add_filter(raw, { _, message, data in
            guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            return Unmanaged<MessageRouter>.fromOpaque(data).takeUnretainedValue().route(message)
        }, userData, { data in
            if let data { Unmanaged<MessageRouter>.fromOpaque(data).release() }
        })
        if added == 0 { Unmanaged<MessageRouter>.fromOpaque(userData).release() }
        return router
    }

    /// Takes over the caller's reference to `message`.
    func receive(methodCall message: OpaquePointer) {
        // A call arriving while the connection is being torn down gets no answer (libdbus is closing).
        guard let connection else {
            dbus_message_unref(message)
            return
        }
        MethodDispatcher.receive(message, on: connection, registry: registry, loop: loop)
    }

    private func route(_ message: OpaquePointer) -> DBusHandlerResult {
        if dbus_message_get_type(message) == MessageType.signal, !subscriptions.isEmpty {
            let signal = MessageRef(retaining: message)
            signalLane.async { [subscriptions] in subscriptions.deliver(signal) }
        }
        // Method calls never get here: the loop takes them, and libdbus answers the Peer
        // interface's before it runs any filter.
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }
}

