import CDBus
import KeywellSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// libdbus must know that it is used from several threads before anything else happens.
let threadsInitialized: Bool = dbus_threads_init_default() != 0

/// A connection to a bus (or a peer), with its own loop and worker threads.
///
/// Threading: one loop per connection reads, writes and dispatches, on one of the connection's
/// worker threads at a time (see `ConnectionLoop`). Incoming method calls run there when their
/// object says so and otherwise on the worker pool; signals are delivered in order on a serial
/// queue; `call` blocks only the calling thread and is safe from any number of threads at once
/// (never from the loop's thread, where it would deadlock). Sending is allowed from any thread:
/// libdbus serialises it and writes the message at once when it can.
// @unchecked: libdbus connections are thread-safe (dbus_threads_init_default); our mutable state lives in locked helpers.
public final class DBusConnection: @unchecked Sendable {
    let raw: OpaquePointer
    /// The unique name the bus gave this connection (`:1.42`); nil on a peer-to-peer connection.
    public let uniqueName: String?
    /// Whether `h` (unix fd) values can travel on this connection (known once authenticated).
    public var canPassFileDescriptors: Bool { dbus_connection_can_send_type(raw, TypeCode.unixFD) != 0 }
    let isBusConnection: Bool
    /// For a connection a `DBusPeerServer` accepted: a name unique in this process (`peer:7`)
    /// that stands in for the bus name its messages do not carry (`DBusMethodCall.sender`).
    /// Never starts with ':', so it cannot be mistaken for a bus connection's name.
    public let peerName: String?
    /// False when the worker pool is shared (a peer server's connections): closing leaves it running.
    private let ownsWorkers: Bool

    let loop: ConnectionLoop
    private let pendingReplies: PendingReplyTable
    private let replyWaiters = ReplyWaiterCensus()
    let registry = ObjectRegistry()
    let subscriptions = SignalSubscriptions()
    let workers: WorkerPool
    /// Where its signal handlers run, in order (`MessageRouter`).
    let signalLane: SerialLane
    /// Asked before every send: an atomic flag, where a lock of its own was one more hold on
    /// every reply (docs/performance.md, "The per-call path, counted again").
    private let closed = Atomic<Bool>(false)
    let inFlight: InFlightCalls
    /// Read for every incoming call (its deadline, its decoding budget): a `Protected`, whose
    /// lock is inlined, not a `ConditionLock` taken through an unspecialised generic call.
    let limits = Protected((deadline: Duration.seconds(25), decodedValues: Int.max))

    // MARK: Opening

    /// The session bus address: `DBUS_SESSION_BUS_ADDRESS`, else `unix:path=$XDG_RUNTIME_DIR/bus`.
    public static func sessionBusAddress(environment: [String: String]) -> String? {
        sessionBusAddress { environment[$0] }
    }

    /// The same, read from the process's environment with getenv(3): building
    /// `ProcessInfo.environment`'s dictionary costs a short-lived client more than its call
    /// (docs/performance.md).
    public static func sessionBusAddress() -> String? {
        sessionBusAddress { name in getenv(name).map { String(cString: $0) } }
    }

    private static func sessionBusAddress(_ variable: (String) -> String?) -> String? {
        if let address = variable("DBUS_SESSION_BUS_ADDRESS"), !address.isEmpty { return address }
        if let runtime = variable("XDG_RUNTIME_DIR"), !runtime.isEmpty, !runtime.utf8.contains(0) {
            return unixSocketAddress(runtime + "/bus")
        }
        return nil
    }

    /// The D-Bus address of the Unix socket at `path` (`unix:path=…`, escaped as addresses
    /// require); nil only when libdbus is out of memory.
    static func unixSocketAddress(_ path: String) -> String? {
        guard let escaped = dbus_address_escape_value(path) else { return nil }
        defer { dbus_free(escaped) }
        return "unix:path=" + String(cString: escaped)
    }

    static let noSessionBus = DBusError(
        name: DBusError.Name.failed, message: "No session bus: neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is set")

    /// A new private connection to the session bus.
    public static func sessionBus(environment: [String: String]) throws(DBusError) -> DBusConnection {
        guard let address = sessionBusAddress(environment: environment) else { throw noSessionBus }
        return try DBusConnection(address: address)
    }

    /// A new private connection to the session bus of this process's environment.
    public static func sessionBus() throws(DBusError) -> DBusConnection {
        guard let address = sessionBusAddress() else { throw noSessionBus }
        return try DBusConnection(address: address)
    }

    /// A new private connection to `address`; with `registerWithBus` it says Hello and gets a
    /// unique name (leave it off for peer-to-peer connections).
    public convenience init(address: String, registerWithBus: Bool = true) throws(DBusError) {
        let connection = try openPrivateConnection(address, registerWithBus: registerWithBus)
        do {
            try self.init(raw: connection, isBus: registerWithBus)
        } catch {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw error
        }
    }

    private init(raw: OpaquePointer, isBus: Bool) throws(DBusError) {
        self.raw = raw
        self.isBusConnection = isBus
        self.peerName = nil
        self.uniqueName = isBus ? dbus_bus_get_unique_name(raw).map { String(cString: $0) } : nil
        // The loop's leader alone stays once a burst is over: idle workers held their stacks'
        // tops and their malloc caches' blocks, which no trim gives back (docs/performance.md,
        // "The daemon"). A method call that finds none idle starts one beside it (`ConnectionLoop`).
        self.workers = WorkerPool(name: "dbus-worker", keepAlive: 1)
        self.signalLane = SerialLane(workers: workers)
        self.ownsWorkers = true
        self.inFlight = InFlightCalls()
        let pendingReplies = PendingReplyTable()
        self.pendingReplies = pendingReplies
        self.loop = try ConnectionLoop(connection: raw, workers: workers, onFinish: { pendingReplies.closeAll() })
        startLoop()
    }

    /// A connection a `DBusPeerServer` accepted (its reference is ours now), still
    /// authenticating: its loop runs on the server's shared `workers` once `startLoop()` is
    /// called, after its objects are registered, and `onFinish` runs when it ends.
    init(accepted raw: OpaquePointer, peerName: String, workers: WorkerPool,
         onFinish: @escaping @Sendable () -> Void) throws(DBusError) {
        self.raw = raw
        self.isBusConnection = false
        self.peerName = peerName
        self.uniqueName = nil
        self.workers = workers
        self.signalLane = SerialLane(workers: workers)
        self.ownsWorkers = false
        let pendingReplies = PendingReplyTable()
        self.pendingReplies = pendingReplies
        // The caller leaving is the connection ending: its calls still running are marked then.
        let inFlight = InFlightCalls()
        inFlight.startWatching()
        self.inFlight = inFlight
        self.loop = try ConnectionLoop(connection: raw, workers: workers, onFinish: {
            pendingReplies.closeAll()
            inFlight.callerLeft(peerName)
            onFinish()
        })
    }

    func startLoop() {
        let router = MessageRouter.install(on: raw, for: self)
        loop.start(methodCalls: { message in router.receive(methodCall: message) })
    }

    /// Reply waiters of this connection still in memory; after its calls are answered, 0 (a
    /// waiter goes once libdbus has finished with its pending call).
    var liveReplyWaiters: Int { replyWaiters.count.load(ordering: .relaxed) }

    deinit {
        close()
        dbus_connection_unref(raw)
    }

    // MARK: Life cycle

    /// True until the connection is closed or the bus drops it.
    public var isConnected: Bool { !loop.isFinished && dbus_connection_get_is_connected(raw) != 0 }

    /// True on the thread that does this connection's I/O (where `DBusCallPlacement.ioThread`
    /// handlers run): blocking here holds up every caller, and a blocking call from here fails.
    public var isOnIOThread: Bool { loop.isOnLoopThread }

    /// Blocks the calling thread until the connection is closed (by `close()`, e.g. from a
    /// SIGTERM handler) or lost. A daemon's main thread parks here.
    public func run() { loop.waitUntilFinished() }

    /// Stops the I/O thread, fails calls still waiting for replies, sends what is queued, and
    /// closes the connection. Idempotent; safe from any thread.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        loop.stop()
        pendingReplies.closeAll()
        if ownsWorkers { workers.stop() }
        if !loop.isOnLoopThread, dbus_connection_get_is_connected(raw) != 0 {
            dbus_connection_flush(raw)
        }
        dbus_connection_close(raw)
    }

    private var isClosed: Bool { closed.load(ordering: .acquiring) }

    // MARK: Calls

    /// Calls a method and waits for its reply (the return values, or the error it answered).
    /// Times out with `NoReply` (`error.isTimeout`).
    public func call(destination: String?, path: String, interface: String?, member: String,
                     arguments: [DBusValue] = [], timeout: Duration = .seconds(25),
                     autoStart: Bool = true) throws(DBusError) -> [DBusValue] {
        let message = try MessageRef.methodCall(destination: destination, path: path, interface: interface, member: member,
                                                arguments: arguments, autoStart: autoStart)
        let reply = try sendAndWait(message, timeout: timeout)
        if reply.type == MessageType.error { throw reply.asError() }
        return try reply.arguments()
    }

    /// The same call without blocking a thread.
    public func callAsync(destination: String?, path: String, interface: String?, member: String,
                          arguments: [DBusValue] = [], timeout: Duration = .seconds(25),
                          autoStart: Bool = true) async throws(DBusError) -> [DBusValue] {
        let message = try MessageRef.methodCall(destination: destination, path: path, interface: interface, member: member,
                                                arguments: arguments, autoStart: autoStart)
        let box = WaiterBox()
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<PendingReply.Outcome, DBusError>, Never>) in
            do throws(DBusError) {
                // The completion is in place before the message leaves, and the clock starts with it.
                let waiter = try sendExpectingReply(message) { outcome in
                    continuation.resume(returning: .success(outcome))
                }
                box.waiter = waiter
                box.expiry = TimerThread.shared.schedule(after: timeout) { waiter.expire() }
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        if let waiter = box.waiter { forget(waiter) }
        if let expiry = box.expiry { TimerThread.shared.cancel(expiry) }
        let outcome = try result.get()
        switch outcome {
        case .reply(let reply):
            if reply.type == MessageType.error { throw reply.asError() }
            return try reply.arguments()
        case .timedOut: throw .timedOut(after: timeout)
        case .connectionClosed: throw .disconnected()
        }
    }

    /// Sends a method call that asks for no reply.
    public func callWithoutReply(destination: String?, path: String, interface: String?, member: String,
                                 arguments: [DBusValue] = []) throws(DBusError) {
        let message = try MessageRef.methodCall(destination: destination, path: path, interface: interface, member: member)
        message.setNoReply()
        try message.append(arguments)
        try send(message)
    }

    /// Emits a signal (broadcast, or unicast to `destination`).
    public func emitSignal(path: String, interface: String, member: String, arguments: [DBusValue] = [],
                           destination: String? = nil) throws(DBusError) {
        let message = try MessageRef.signal(path: path, interface: interface, member: member)
        if let destination { try message.setDestination(destination) }
        try message.append(arguments)
        try send(message)
    }

    /// Sends a method call and returns at once; the call's `reply()` waits for the answer. For a
    /// thread with work to do while the call is on its way.
    public func startCall(destination: String?, path: String, interface: String?, member: String,
                          arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) throws(DBusError) -> DBusCallInFlight {
        let message = try MessageRef.methodCall(destination: destination, path: path, interface: interface, member: member,
                                                arguments: arguments)
        let deadline = deadline(after: timeout)
        return DBusCallInFlight(connection: self, waiter: try sendExpectingReply(message), deadline: deadline, timeout: timeout)
    }

    func sendAndWait(_ message: MessageRef, timeout: Duration) throws(DBusError) -> MessageRef {
        if loop.isOnLoopThread { throw .failed("A blocking call from the D-Bus I/O thread would deadlock") }
        let deadline = deadline(after: timeout)
        return try awaitReply(try sendExpectingReply(message), deadline: deadline, timeout: timeout)
    }

    /// Waits for a sent call's reply, then forgets the call.
    fileprivate func awaitReply(_ waiter: PendingReply, deadline: UInt64, timeout: Duration) throws(DBusError) -> MessageRef {
        defer { forget(waiter) }
        if loop.isOnLoopThread {
            waiter.cancel()
            throw .failed("A blocking call from the D-Bus I/O thread would deadlock")
        }
        switch waiter.wait(untilNanoseconds: deadline) {
        case .reply(let reply): return reply
        case .timedOut: throw .timedOut(after: timeout)
        case .connectionClosed: throw .disconnected()
        }
    }

    private func sendExpectingReply(_ message: MessageRef,
                                    completion: (@Sendable (PendingReply.Outcome) -> Void)? = nil) throws(DBusError) -> PendingReply {
        try checkSendable(message.pointer)
        var pending: OpaquePointer? = nil
        // Infinite for libdbus: the waiter measures the timeout itself.
        let (sent, wantsWake) = loop.sending { SendScope.run { dbus_connection_send_with_reply(raw, message.pointer, &pending, Int32.max) } }
        if wantsWake { loop.wakeIfNeededAfterSend() }
        guard sent != 0 else { throw .noMemory() }
        guard let pending else { throw .disconnected() }
        let waiter = PendingReply(pending: pending, completion: completion, census: replyWaiters)
        guard pendingReplies.insert(waiter) else {
            dbus_pending_call_cancel(pending)
            throw .disconnected()
        }
        waiter.arm()
        return waiter
    }

    func send(_ message: MessageRef) throws(DBusError) {
        try send(message: message.pointer)
    }

    /// As `send(_:)`, for a message held without a `MessageRef` (a reply: an object less per call).
    func send(message: OpaquePointer) throws(DBusError) {
        try checkSendable(message)
        let (sent, wantsWake) = loop.sending { SendScope.run { dbus_connection_send(raw, message, nil) } }
        if wantsWake { loop.wakeIfNeededAfterSend() }
        guard sent != 0 else { throw .noMemory() }
    }

    private func checkSendable(_ message: OpaquePointer) throws(DBusError) {
        if isClosed { throw .disconnected() }
        // The message first: asking the connection takes libdbus's lock, on every reply.
        if dbus_message_contains_unix_fds(message) != 0, !canPassFileDescriptors {
            throw .notSupported("This connection cannot pass file descriptors")
        }
    }

    // MARK: Replies (used by DBusMethodCall)

    /// The reply's byte arrays are wiped once sent (the handler made them for this reply alone),
    /// unless `wipe` is false: the call said they hold no secrets. `strings`: its strings carry
    /// secrets, and are zeroed in libdbus's copy too (docs/dbus-layer.md, "Secrets in messages").
    func sendReply(to call: OpaquePointer, values: [DBusValue], wipe: Bool = true, strings: Bool = false) {
        defer { if wipe { ByteArrayWipe.wipe(values) } }
        // The signature just written tells whether libdbus's copy can hold an `ay`: a reply of
        // paths and strings (most reads) is not scanned again once sent.
        sendReply(to: call, wipe: wipe, strings: strings) { (reply) throws(DBusError) in
            ByteArrayWipe.mayHoldBytes(try MessageEncoder.append(values, to: reply))
        }
    }

    /// As `sendReply(to:values:wipe:strings:)`, the value written by its handler into the reply.
    func sendReply(to call: OpaquePointer, written: DBusWrittenValue, signature: DBusSignature, wipe: Bool = true,
                   strings: Bool = false) {
        defer { written.whenDone() }
        sendReply(to: call, wipe: wipe, strings: strings) { (reply) throws(DBusError) in
            try DBusBodyWriter.write(signature, into: reply, written.write)
            return true
        }
    }

    /// A method return whose body `fill` writes; a failure to build or send it answers with an error.
    /// The call and the reply are held as libdbus's pointers: a `MessageRef` for each was two
    /// objects per call (docs/performance.md, "The D-Bus layer's strings and objects per call").
    /// `fill` returns whether the body may hold an `ay` (false only when its signature says not).
    private func sendReply(to call: OpaquePointer, wipe: Bool, strings: Bool, fill: (OpaquePointer) throws(DBusError) -> Bool) {
        guard dbus_message_get_no_reply(call) == 0 else { return }
        do throws(DBusError) {
            guard let reply = dbus_message_new_method_return(call) else { throw DBusError.noMemory() }
            defer { dbus_message_unref(reply) }
            let mayHoldBytes = try fill(reply)
            try send(message: reply)
            // Written out already (nothing queued): libdbus is done with the buffer.
            if (wipe && mayHoldBytes) || strings, dbus_connection_has_messages_to_send(raw) == 0 {
                ByteArrayWipe.wipe(message: reply, strings: strings)
            }
            #if DEBUG
            Self.sentReplyObserver.read { $0 }?(reply)
            #endif
        } catch let error where error.name == DBusError.Name.disconnected {
            return
        } catch {
            sendReply(to: call, error: .failed("The reply could not be sent: \(error.message)"))
        }
    }

    #if DEBUG
    /// Tests only (debug builds): sees each method return once it is sent and wiped, while it is
    /// still referenced, so a test can keep it and read what is left of libdbus's copy.
    static let sentReplyObserver = Protected<(@Sendable (OpaquePointer) -> Void)?>(nil)
    #endif

    func sendReply(to call: OpaquePointer, error: DBusError) {
        guard dbus_message_get_no_reply(call) == 0, let reply = try? MessageRef.errorReply(to: call, error) else { return }
        defer { dbus_message_unref(reply) }
        try? send(message: reply)
    }

    // MARK: Exported objects

    /// Exports `object` at exactly `path`.
    public func register(_ object: any DBusObject, at path: String) throws(DBusError) {
        try registry.register(object, at: path, subtree: false)
    }

    /// Exports `object` for `path` and every path below it (exact registrations take precedence).
    public func registerSubtree(_ object: any DBusObject, at path: String) throws(DBusError) {
        try registry.register(object, at: path, subtree: true)
    }

    public func unregister(path: String) {
        registry.unregister(path: path)
    }

    // MARK: Signals

    /// Subscribes `handler` to signals matching `rule` (and asks the bus to route them here).
    /// Handlers run one at a time, in arrival order, off the I/O thread.
    @discardableResult
    public func addMatch(_ rule: DBusMatchRule, handler: @escaping @Sendable (DBusSignal) -> Void) throws(DBusError) -> DBusSignalSubscription {
        try rule.validate()
        let id = subscriptions.add(rule, handler)
        if isBusConnection {
            do {
                _ = try callBus("AddMatch", [.string(rule.ruleString)])
            } catch {
                subscriptions.remove(id)
                throw error
            }
        }
        return DBusSignalSubscription(id: id, rule: rule, connection: self)
    }

    /// Ends a subscription (also `subscription.cancel()`).
    public func removeMatch(_ subscription: DBusSignalSubscription) {
        guard subscriptions.remove(subscription.id), isBusConnection, !isClosed else { return }
        _ = try? callBus("RemoveMatch", [.string(subscription.rule.ruleString)])
    }

    func callBus(_ member: String, _ arguments: [DBusValue]) throws(DBusError) -> [DBusValue] {
        try call(destination: StandardInterface.busName, path: StandardInterface.busPath, interface: StandardInterface.bus,
                 member: member, arguments: arguments)
    }
}

/// A method call already sent (`DBusConnection.startCall`), whose reply is taken once, later.
/// Dropped without taking it, the call is cancelled.
public final class DBusCallInFlight: Sendable {
    private let connection: DBusConnection
    private let waiter: PendingReply
    private let deadline: UInt64
    private let timeout: Duration
    private let taken = Atomic<Bool>(false)

    fileprivate init(connection: DBusConnection, waiter: PendingReply, deadline: UInt64, timeout: Duration) {
        self.connection = connection
        self.waiter = waiter
        self.deadline = deadline
        self.timeout = timeout
    }

    /// Waits for the reply: its values, or the error it answered (`timedOut` after the call's
    /// timeout, counted from when it was sent). Not from the D-Bus I/O thread.
    public func reply() throws(DBusError) -> [DBusValue] {
        guard !taken.exchange(true, ordering: .acquiringAndReleasing) else { throw .failed("The reply was already taken") }
        let reply = try connection.awaitReply(waiter, deadline: deadline, timeout: timeout)
        if reply.type == MessageType.error { throw reply.asError() }
        return try reply.arguments()
    }

    deinit {
        guard !taken.load(ordering: .acquiring) else { return }
        waiter.cancel()
        connection.forget(waiter)
    }
}

extension DBusConnection {
    /// A call's outcome was taken or will never be: the connection stops tracking its waiter and
    /// gives back the waiter's reference to the pending call (docs/dbus-layer.md).
    fileprivate func forget(_ waiter: PendingReply) {
        pendingReplies.remove(waiter)
        waiter.release()
    }
}

/// Lets an asynchronous completion find its own waiter (created after the closure) and its
/// timeout. Locked: the reply can resume the caller before the continuation's body has stored them.
private final class WaiterBox: Sendable {
    private struct Parts {
        var waiter: PendingReply?
        var expiry: TimerThread.Token?
    }
    private let parts = Protected(Parts())

    var waiter: PendingReply? {
        get { parts.withLock { $0.waiter } }
        set { parts.withLock { $0.waiter = newValue } }
    }
    var expiry: TimerThread.Token? {
        get { parts.withLock { $0.expiry } }
        set { parts.withLock { $0.expiry = newValue } }
    }
}

/// Moves a libdbus error into ours.
/// A new private libdbus connection to `address`, which never exits the process when the bus
/// goes away; with `registerWithBus` it has said Hello. Both connection types start here.
func openPrivateConnection(_ address: String, registerWithBus: Bool) throws(DBusError) -> OpaquePointer {
    _ = threadsInitialized
    guard !address.utf8.contains(0) else { throw .invalidArgs("Invalid address") }
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    guard let connection = dbus_connection_open_private(address, &error) else { throw takeError(&error) }
    // libdbus would otherwise call exit() when the bus goes away.
    dbus_connection_set_exit_on_disconnect(connection, 0)
    if registerWithBus, dbus_bus_register(connection, &error) == 0 {
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
        throw takeError(&error)
    }
    return connection
}

func takeError(_ error: inout CDBus.DBusError) -> DBusError {
    let name = error.name.map { String(cString: $0) } ?? DBusError.Name.failed
    let message = error.message.map { String(cString: $0) } ?? ""
    dbus_error_free(&error)
    return DBusError(name: name, message: message)
}
