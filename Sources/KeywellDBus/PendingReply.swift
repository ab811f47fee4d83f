import CDBus
import KeywellSystem
import Synchronization

/// Waits for the reply to one sent method call.
///
/// The loop thread completes the libdbus pending call while dispatching and our notify function
/// wakes the waiting thread; the caller never does I/O itself, so any number of threads can be
/// waiting on one connection at once. Timeouts are measured here (libdbus gets an infinite
/// timeout), so no libdbus timer machinery is needed.
// @unchecked: the outcome is guarded by `lock`; libdbus locks the pending call itself.
final class PendingReply: @unchecked Sendable {
    enum Outcome {
        case reply(MessageRef)
        case timedOut
        case connectionClosed
    }

    private let pending: OpaquePointer
    private let lock = ConditionLock()
    private var notified = false
    private var closed = false
    /// Our reference to `pending` was given back (`release()`).
    private var released = false
    /// Asynchronous completion (used by `callAsync`); runs once.
    private var completion: (@Sendable (Outcome) -> Void)?

    /// Takes over the caller's reference to `pending`. With `completion` the reply is delivered
    /// to it (exactly once: reply, `expire()` or closing) instead of to `wait`.
    init(pending: OpaquePointer, completion: (@Sendable (Outcome) -> Void)? = nil, census: ReplyWaiterCensus? = nil) {
        self.pending = pending
        self.completion = completion
        self.census = census
        census?.count.add(1, ordering: .relaxed)
    }

    private let census: ReplyWaiterCensus?

    // Only when `release()` was not called: an armed waiter is kept alive by the pending call
    // itself (its notify data), so it reaches here only after giving its reference back.
    deinit {
        if !released { dbus_pending_call_unref(pending) }
        census?.count.subtract(1, ordering: .relaxed)
    }

    /// The owner is done with the call (outcome taken, or cancelled): gives back our reference to
    /// the pending call. Until then the pending call and this waiter hold each other (our
    /// reference; the retained notify data), so without it every answered call would keep both,
    /// its messages and its timeout reply for good (docs/dbus-layer.md, "Calls and their
    /// waiters"). libdbus holds its own reference while it completes a call, so a notify still
    /// running is safe; the pending call's end releases the notify data and with it this waiter.
    func release() {
        let first = lock.withLock { () -> Bool in
            defer { released = true }
            return !released
        }
        if first { dbus_pending_call_unref(pending) }
    }

    /// Installs the notify function. Call once, before waiting.
    func arm() {
        let userData = Unmanaged.passRetained(self).toOpaque()
        let installed = dbus_pending_call_set_notify(pending, { _, data in
            Unmanaged<PendingReply>.fromOpaque(data!).takeUnretainedValue().notify()
        }, userData, { data in
            Unmanaged<PendingReply>.fromOpaque(data!).release()
        })
        if installed == 0 {
            Unmanaged<PendingReply>.fromOpaque(userData).release()
        }
        // A reply dispatched before the notify was installed is seen by `isCompleted` below.
        if dbus_pending_call_get_completed(pending) != 0 { notify() }
    }

    private func notify() {
        lock.lock()
        notified = true
        lock.broadcast()
        let completion = self.completion
        self.completion = nil
        lock.unlock()
        if let completion { completion(takeOutcome()) }
    }

    /// The connection went away: waiters stop waiting.
    func connectionClosed() {
        lock.lock()
        closed = true
        lock.broadcast()
        let completion = self.completion
        self.completion = nil
        lock.unlock()
        if let completion { completion(.connectionClosed) }
    }

    /// libdbus's own lock is never taken while ours is held (its notify may run under its lock).
    func wait(untilNanoseconds deadline: UInt64) -> Outcome {
        lock.lock()
        while !notified && !closed {
            if !lock.wait(untilNanoseconds: deadline), monotonicNanoseconds() >= deadline { break }
        }
        let completed = notified
        let wasClosed = closed
        lock.unlock()
        if completed { return takeOutcome() }
        dbus_pending_call_cancel(pending)
        return wasClosed ? .connectionClosed : .timedOut
    }

    /// Nobody will wait for the reply: libdbus stops expecting it.
    func cancel() {
        dbus_pending_call_cancel(pending)
    }

    /// For asynchronous calls: ends the wait with `.timedOut` unless the reply came first.
    func expire() {
        lock.lock()
        let pendingCompletion = completion
        completion = nil
        lock.unlock()
        if let pendingCompletion {
            dbus_pending_call_cancel(pending)
            pendingCompletion(.timedOut)
        }
    }

    private func takeOutcome() -> Outcome {
        guard let reply = dbus_pending_call_steal_reply(pending) else { return .connectionClosed }
        return .reply(MessageRef(owning: reply))
    }
}

/// How many reply waiters of one connection are still in memory: the calls in flight, once
/// their waiters are released as they should be.
final class ReplyWaiterCensus: Sendable {
    let count = Atomic<Int>(0)
}

/// The replies a connection is waiting for, so that closing it can release every waiter.
// @unchecked: `waiting` and `closed` are only touched under `lock`.
final class PendingReplyTable: @unchecked Sendable {
    private let lock = ConditionLock()
    private var waiting: [ObjectIdentifier: PendingReply] = [:]
    private var closed = false

    /// False once the connection is closed.
    func insert(_ reply: PendingReply) -> Bool {
        lock.withLock {
            if closed { return false }
            waiting[ObjectIdentifier(reply)] = reply
            return true
        }
    }

    func remove(_ reply: PendingReply) {
        _ = lock.withLock { waiting.removeValue(forKey: ObjectIdentifier(reply)) }
    }

    func closeAll() {
        let all = lock.withLock { () -> [PendingReply] in
            closed = true
            defer { waiting.removeAll() }
            return Array(waiting.values)
        }
        for reply in all { reply.connectionClosed() }
    }
}
