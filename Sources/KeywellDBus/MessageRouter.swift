import CDBus

/// The connection's message filter, run by libdbus on the I/O thread during dispatch. Method
/// calls go to `MethodDispatcher` (which runs the short ones its objects place on this thread and
/// hands the rest to the worker pool), signals to the delivery queue.
final class MessageRouter: @unchecked Sendable {
    /// Weak so that the I/O thread never holds the last reference to the connection.
    private weak let connection: DBusConnection?
    private let registry: ObjectRegistry
    private let workers: WorkerPool
    private let subscriptions: SignalSubscriptions
    private let signalQueue: DispatchQueueBox

    private init(connection: DBusConnection) {
        self.connection = connection
        self.registry = connection.registry
        self.workers = connection.workers
        self.subscriptions = connection.subscriptions
        self.signalQueue = DispatchQueueBox(queue: connection.signalQueue)
    }

    static func install(on raw: OpaquePointer, for connection: DBusConnection) {
        let router = MessageRouter(connection: connection)
        let userData = Unmanaged.passRetained(router).toOpaque()
        let added = dbus_connection_add_filter(raw, { _, message, data in
            guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            return Unmanaged<MessageRouter>.fromOpaque(data).takeUnretainedValue().route(message)
        }, userData, { data in
            if let data { Unmanaged<MessageRouter>.fromOpaque(data).release() }
        })
        if added == 0 { Unmanaged<MessageRouter>.fromOpaque(userData).release() }
    }

    private func route(_ message: OpaquePointer) -> DBusHandlerResult {
        switch dbus_message_get_type(message) {
        case MessageType.methodCall:
            guard let connection else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            MethodDispatcher.receive(MessageRef(retaining: message), on: connection, registry: registry, workers: workers)
            return DBUS_HANDLER_RESULT_HANDLED
        case MessageType.signal:
            if !subscriptions.isEmpty {
                let signal = MessageRef(retaining: message)
                signalQueue.queue.async { [subscriptions] in subscriptions.deliver(signal) }
            }
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        default:
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
    }
}

import Dispatch

struct DispatchQueueBox: @unchecked Sendable {
    let queue: DispatchQueue
}
