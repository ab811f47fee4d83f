import CDBus
import KeywellSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An incoming method call, handed to a `DBusObject` on the thread its `placement(of:)` chose.
///
/// Reply exactly once with `reply(_:)` or `reply(error:)`, from any thread, now or later; later
/// replies are ignored. A call dropped without a reply answers `Failed` so the caller never
/// waits for its timeout.
// @unchecked: the reply state is only touched under the connection's `inFlight` lock; `method` is set before a handler sees the call.
public final class DBusMethodCall: @unchecked Sendable {
    public let connection: DBusConnection
    /// The caller's unique bus name; on a connection a `DBusPeerServer` accepted, its `peerName`
    /// (empty on other peer-to-peer connections).
    public let sender: String
    /// Set from the message as the call is dispatched, before a handler sees it: the registry's
    /// own string when the path is one registered (a subtree's root), else a new one. Unchecked:
    /// never written after that.
    @exclusivity(unchecked) public internal(set) var path: String = "/"
    /// Nil when the caller left the interface out (allowed by D-Bus; the method was found by name).
    /// Set as `path` is: the declaring interface's own name when the object has it, so that no
    /// string is made from the message on every call (docs/performance.md, "The D-Bus
    /// layer's strings and objects per call").
    @exclusivity(unchecked) public internal(set) var interface: String?
    public let member: String
    /// The signature the caller sent: the method's declared one (SignatureCheck).
    public let signature: DBusSignature
    /// Set once decoded, before a handler sees the call. Unchecked: never written after that.
    @exclusivity(unchecked) public internal(set) var arguments: [DBusValue] = []
    /// The declaration matched for this call (nil for the standard interfaces).
    public internal(set) var method: DBusMethod?
    /// False when the caller asked for no reply (replies are then dropped).
    public let expectsReply: Bool

    /// The call's message, whose reference the call owns (released in its deinit): a
    /// `MessageRef` around it was an object more per call.
    let message: OpaquePointer
    /// When the call was read off the connection: its handler's log line counts from here
    /// (`CallContext`), so the clock is read once per call, not once more for the log.
    public let arrived: ContinuousClock.Instant
    /// When the connection's `callDeadline` runs out for this call (counted from its arrival).
    public let deadline: ContinuousClock.Instant
    /// The connection's `maximumDecodedValuesPerCall` as the call arrived, read in the same
    /// hold of the limits' lock as the deadline.
    let decodingBudget: Int
    /// Whether the call is in the connection's table of calls in flight (its message names a
    /// sender), where the caller's departure finds it.
    let isListed: Bool
    /// Set when the caller left the bus (`InFlightCalls.callerLeft`).
    private let callerLeft = Atomic<Bool>(false)
    /// Touched only under the lock of the connection's table of calls in flight (`withState`),
    /// which a reply takes anyway to leave that table: a `Protected` of the call's own cost two
    /// allocations on every call, and a second lock at the reply. Unchecked: that lock already
    /// makes every access exclusive.
    @exclusivity(unchecked) private var state = ReplyState()

    private struct ReplyState {
        var replied = false
        var replySent = false
        var replyWipe = true
        var abandonNoted = false
        var afterReplyWork: [@Sendable () -> Void] = []
        /// Arguments whose descriptor a handler took (`takeFileDescriptor`).
        var takenDescriptors: Set<Int> = []
    }

    /// Whether the reply's byte arrays may hold secrets, to be wiped from memory once it is out
    /// (the default). A handler whose reply carries only public or encrypted bytes (a Secret
    /// Service DH session's secrets) clears it before replying, sparing a walk over every byte
    /// array of the reply, twice.
    public var replyMayHoldSecrets: Bool {
        get { withState { $0.replyWipe } }
        set { withState { $0.replyWipe = newValue } }
    }

    /// Made as the message is read, on the I/O thread (`MethodDispatcher.receive`), before any
    /// later message of the bus (the caller's departure) is; its arguments are decoded after.
    /// Takes over the caller's reference to `message`.
    init(connection: DBusConnection, message: OpaquePointer, arrived: ContinuousClock.Instant) {
        self.connection = connection
        self.message = message
        self.arrived = arrived
        let limits = connection.limits.withLock { $0 }
        deadline = DBusConnection.callDeadline(limits.deadline, forCallArrivingAt: arrived)
        decodingBudget = limits.decodedValues
        let sender = dbus_message_get_sender(message).map { String(cString: $0) } ?? ""
        isListed = !sender.isEmpty
        self.sender = sender.isEmpty ? connection.peerName ?? "" : sender
        self.member = dbus_message_get_member(message).map { String(cString: $0) } ?? ""
        self.signature = DBusSignature(unchecked: dbus_message_get_signature(message).map { String(cString: $0) } ?? "")
        self.expectsReply = dbus_message_get_no_reply(message) == 0
    }

    deinit {
        let (replied, afterReplyWork, takenDescriptors) = withState { ($0.replied, $0.afterReplyWork, $0.takenDescriptors) }
        // A reply took the call off the table already (`claimReply`).
        if !replied { connection.inFlight.unregister(self) }
        if !replied, expectsReply {
            connection.sendReply(to: message, error: .failed("The service dropped the call to \(member) without replying"))
        }
        for work in afterReplyWork { work() }
        // Received descriptors are the call's (libdbus duplicated them for us): any a handler
        // did not take close now, so a caller cannot make the service hold descriptors by
        // sending them where none is wanted (a refused call, a method that takes none).
        // With no descriptor attached, libdbus duplicated none (an `h` pointing past them reads
        // as -1): no walk over every argument then, on every call.
        if dbus_message_contains_unix_fds(message) != 0 {
            for (index, argument) in arguments.enumerated() where !takenDescriptors.contains(index) {
                Self.closeDescriptors(in: argument)
            }
        }
        // Handlers copy what they keep; the call's byte arrays (passwords, secrets) go now.
        ByteArrayWipe.wipe(arguments)
        // So do its strings when they carry secrets (docs/dbus-layer.md, "Secrets in messages").
        ByteArrayWipe.wipe(message: message, strings: method?.secretStrings.inputs.isEmpty == false)
        dbus_message_unref(message)
    }

    public var hasReplied: Bool { withState { $0.replied } }

    /// Whether the reply's strings carry secrets (`DBusMethod.secretStrings`): they are zeroed in
    /// libdbus's copy once it is written out, whatever `replyMayHoldSecrets` says.
    private var replyHoldsSecretStrings: Bool {
        method?.secretStrings.outputs.isEmpty == false
    }

    /// The descriptor passed as argument `index` (type `h`), now the handler's to close. Nil if
    /// that argument is not a descriptor or was taken already. Descriptors not taken are closed
    /// when the call ends.
    public func takeFileDescriptor(argument index: Int) -> Int32? {
        guard arguments.indices.contains(index), let descriptor = arguments[index].unixFDValue else { return nil }
        return withState { $0.takenDescriptors.insert(index).inserted } ? descriptor : nil
    }

    private static func closeDescriptors(in value: DBusValue) {
        switch value {
        case .unixFD(let descriptor): close(descriptor)
        case .array(_, let elements), .structure(let elements): elements.forEach(closeDescriptors)
        case .dictionary(_, _, let entries): entries.forEach { closeDescriptors(in: $0.key); closeDescriptors(in: $0.value) }
        case .variant(let inner): closeDescriptors(in: inner)
        default: break
        }
    }

    /// True once nobody waits for the reply: the caller left the bus (noticed on a connection
    /// that `watchCallersLeaving()`) or the connection's `callDeadline` passed since the call
    /// arrived.
    public var isAbandoned: Bool {
        callerLeft.load(ordering: .acquiring) || ContinuousClock.now >= deadline
    }

    /// For handlers of long calls, every so many items: throws LimitsExceeded once the call is
    /// abandoned (see `isAbandoned`), so the handler stops working for nobody. The error reply
    /// reaches a caller that set a longer timeout than the deadline; the bus drops it otherwise.
    public func checkStillWanted() throws(DBusError) {
        guard isAbandoned else { return }
        let first = withState { state -> Bool in
            defer { state.abandonNoted = true }
            return !state.abandonNoted
        }
        if first { connection.inFlight.noteAbandoned() }
        if callerLeft.load(ordering: .acquiring) {
            throw DBusError(name: DBusError.Name.limitsExceeded, message: "\(member) stopped: its caller left the bus")
        }
        throw DBusError(name: DBusError.Name.limitsExceeded,
                        message: "\(member) stopped: it ran past its deadline of \(connection.callDeadline)")
    }

    /// Sends the return values. Values that cannot be encoded turn into a `Failed` error reply.
    /// Returns false if the call had already been answered.
    @discardableResult
    public func reply(_ values: [DBusValue] = []) -> Bool {
        guard let wipe = claimReply() else { return false }
        connection.sendReply(to: message, values: values, wipe: wipe, strings: replyHoldsSecretStrings)
        replyIsOut()
        return true
    }

    /// Sends a dispatch's reply: its values, or the value its handler writes.
    @discardableResult
    public func reply(_ body: DBusReplyBody) -> Bool {
        switch body {
        case .values(let values):
            return reply(values)
        case .written(let value, let signature):
            guard let wipe = claimReply() else { value.whenDone(); return false }
            connection.sendReply(to: message, written: value, signature: signature, wipe: wipe, strings: replyHoldsSecretStrings)
            replyIsOut()
            return true
        }
    }

    /// Sends an error reply. Returns false if the call had already been answered.
    @discardableResult
    public func reply(error: DBusError) -> Bool {
        guard claimReply() != nil else { return false }
        connection.sendReply(to: message, error: error)
        replyIsOut()
        return true
    }

    /// Runs `body` and replies with its values or its error.
    public func reply(with body: () throws(DBusError) -> [DBusValue]) {
        do {
            reply(try body())
        } catch {
            reply(error: error)
        }
    }

    /// Runs `work` once this call's reply is out: at once if it already is, and also if the call
    /// is dropped without one. For what only other clients wait for (the signals of the service's
    /// other face), which then leaves off the caller's round trip: every message a service sends
    /// before its reply delays the reply by the bus's turn for it. The call keeps `work` until
    /// then, so `work` must not keep the call.
    public func afterReply(_ work: @escaping @Sendable () -> Void) {
        let runNow = withState { state -> Bool in
            if state.replySent { return true }
            state.afterReplyWork.append(work)
            return false
        }
        if runNow { work() }
    }

    /// The call whose handler runs on this thread now (while its object's `handle` or a property
    /// handler runs), for code under a handler that has no other way to reach it.
    public static var current: DBusMethodCall? {
        pthread_getspecific(currentKey).map { Unmanaged<DBusMethodCall>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Runs `body` off the D-Bus I/O thread, with this call as `current`: what a handler placed
    /// on the I/O thread leaves for later when its read found that a person must be asked
    /// (`DBusAnswer.afterQuestion`), so that the question never holds up every caller. The loop
    /// goes to an idle worker and `body` runs on this thread, with what the read found in hand;
    /// off the I/O thread `body` runs at once.
    public func finishOffIOThread(_ body: @escaping @Sendable () -> Void) {
        guard connection.isOnIOThread else {
            body()
            return
        }
        connection.loop.runOffLoop { [self] in DBusMethodCall.withCurrent(self, body) }
    }

    /// Runs `body` with `call` as `current` on this thread.
    static func withCurrent(_ call: DBusMethodCall, _ body: () -> Void) {
        let previous = pthread_getspecific(currentKey)
        pthread_setspecific(currentKey, Unmanaged.passUnretained(call).toOpaque())
        defer { pthread_setspecific(currentKey, previous) }
        body()
    }

    private static let currentKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    private func replyIsOut() {
        let work = withState { state -> [@Sendable () -> Void] in
            state.replySent = true
            defer { state.afterReplyWork = [] }
            return state.afterReplyWork
        }
        for item in work { item() }
    }

    /// Claims the reply and takes the call off the table of calls in flight, in one hold of its
    /// lock; returns `replyMayHoldSecrets` as read in that hold (reading it apart was one more
    /// hold on every reply), nil when the call was answered already.
    private func claimReply() -> Bool? {
        var wipe = true
        let claimed = connection.inFlight.claim(self) {
            if state.replied { return false }
            state.replied = true
            wipe = state.replyWipe
            return true
        }
        return claimed ? wipe : nil
    }

    func noteCallerLeft() { callerLeft.store(true, ordering: .releasing) }

    private func withState<Result: Sendable>(_ body: (inout ReplyState) -> Result) -> Result {
        connection.inFlight.locked { body(&state) }
    }
}

/// A file descriptor a call passed (type `h`), as generated dispatch hands it to a handler:
/// `take()` makes it the handler's to close; one not taken is closed when the call ends.
public struct DBusDescriptorArgument {
    private let call: DBusMethodCall
    private let index: Int

    public init(_ call: DBusMethodCall, argument index: Int) {
        self.call = call
        self.index = index
    }

    /// The descriptor, now the caller's to close; nil when the argument holds none or it was taken.
    public func take() -> Int32? { call.takeFileDescriptor(argument: index) }
}
