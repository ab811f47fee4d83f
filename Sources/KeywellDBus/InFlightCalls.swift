import KeywellSystem
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A server connection's calls still being handled, so that a caller leaving the bus
/// (NameOwnerChanged with no new owner, delivered after every call it sent) marks its calls
/// (`DBusMethodCall.isAbandoned`).
///
/// The table holds its calls unretained, so that a call dropped without a reply still goes (its
/// deinit answers it): a call leaves the table, under its lock, when it is answered or in its
/// deinit, before its memory does, so a departure marks only calls still alive. The call itself
/// carries its deadline and flag; a separate object for them cost an allocation on every call
/// (docs/performance.md, "Reads with fewer steps").
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
        var calls: [ObjectIdentifier: (sender: String, call: Unmanaged<DBusMethodCall>)] = [:]
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
    func register(_ call: DBusMethodCall) {
        guard call.isListed else { return }
        table.withLock { table in
            guard table.watching else { return }
            table.calls[ObjectIdentifier(call)] = (call.sender, Unmanaged.passUnretained(call))
        }
    }

    func unregister(_ call: DBusMethodCall) {
        guard call.isListed else { return }
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
    func claim(_ call: DBusMethodCall, _ claim: () -> Bool) -> Bool {
        let unlisted = !call.isListed
        return table.withLock { table in
            guard claim() else { return false }
            if !unlisted { _ = table.calls.removeValue(forKey: ObjectIdentifier(call)) }
            return true
        }
    }

    /// Marks the calls under the lock: a call in the table is alive until it has left it.
    func callerLeft(_ sender: String) {
        table.withLock { table in
            let left = table.calls.filter { $0.value.sender == sender }
            for (key, entry) in left {
                entry.call._withUnsafeGuaranteedRef { $0.noteCallerLeft() }
                table.calls[key] = nil
            }
        }
    }

    /// Counts the calls handlers gave up on (each once).
    func noteAbandoned() { table.withLock { $0.abandoned += 1 } }

    var abandonedCount: Int { table.read { $0.abandoned } }
}
