import KeywellSystem
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Whether anybody still waits for a call's reply: its caller may have left the bus, or its
/// deadline (the time a caller waits by default) may have passed. Handlers of long calls ask
/// `DBusMethodCall.checkStillWanted()` as they go and stop when the answer is no, instead of
/// working for nobody.
final class CallAbandonment: Sendable {
    let sender: String
    let deadline: ContinuousClock.Instant
    /// A flag in the object itself: a ConditionLock cost three allocations on every call.
    private let callerLeft = Atomic<Bool>(false)

    init(sender: String, deadline: ContinuousClock.Instant) {
        self.sender = sender
        self.deadline = deadline
    }

    var hasCallerLeft: Bool { callerLeft.load(ordering: .acquiring) }

    func noteCallerLeft() { callerLeft.store(true, ordering: .releasing) }
}

/// A server connection's calls still being handled, so that a caller leaving the bus
/// (NameOwnerChanged with no new owner, delivered after every call it sent) marks its calls.
///
/// One flat table keyed by the call: registering and unregistering a call hash a pointer, not
/// the sender's name, and make no table per sender (which every call of a lone client made and
/// dropped again). A departure, rare next to calls, walks the calls in flight instead.
///
/// A `Protected` table: its lock is inlined into the caller, where `ConditionLock`'s generic
/// `withLock` was a call into another module, twice on every call (docs/performance.md, "What
/// every method call paid").
final class InFlightCalls: Sendable {
    private struct Table {
        var watching = false
        var calls: [ObjectIdentifier: CallAbandonment] = [:]
        var abandoned = 0
    }

    private let table = Protected(Table())

    /// Marking calls needs the NameOwnerChanged subscription; without it nothing is kept.
    func startWatching() {
        table.withLock { table in
            table.watching = true
            table.calls.reserveCapacity(16)
        }
    }

    /// On the I/O thread, as the call's message is read: before any later message of the bus
    /// (the caller's departure) is.
    func register(_ call: CallAbandonment) {
        guard !call.sender.isEmpty else { return }
        table.withLock { table in
            guard table.watching else { return }
            table.calls[ObjectIdentifier(call)] = call
        }
    }

    func unregister(_ call: CallAbandonment) {
        guard !call.sender.isEmpty else { return }
        table.withLock { table in _ = table.calls.removeValue(forKey: ObjectIdentifier(call)) }
    }

    /// Runs `body` under the table's lock, which also guards every call's reply state
    /// (`DBusMethodCall`): one lock per connection, held for a few stores, where a lock of each
    /// call's own cost two allocations on every call (docs/performance.md, "Reads with fewer
    /// steps"). `body` must not call back into the table.
    func locked<Result: Sendable>(_ body: () -> Result) -> Result {
        table.withLock { _ in body() }
    }

    /// Runs `claim` under the lock and, when it returns true (the call's reply is claimed),
    /// takes the call off the table in the same hold.
    func claim(_ call: CallAbandonment, _ claim: () -> Bool) -> Bool {
        let unlisted = call.sender.isEmpty
        return table.withLock { table in
            guard claim() else { return false }
            if !unlisted { _ = table.calls.removeValue(forKey: ObjectIdentifier(call)) }
            return true
        }
    }

    func callerLeft(_ sender: String) {
        let left = table.withLock { table -> [CallAbandonment] in
            let left = table.calls.values.filter { $0.sender == sender }
            for call in left { table.calls[ObjectIdentifier(call)] = nil }
            return left
        }
        left.forEach { $0.noteCallerLeft() }
    }

    /// Counts the calls handlers gave up on (each once).
    func noteAbandoned() { table.withLock { $0.abandoned += 1 } }

    var abandonedCount: Int { table.read { $0.abandoned } }
}
