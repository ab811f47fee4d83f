import KeywellSystem

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Whether anybody still waits for a call's reply: its caller may have left the bus, or its
/// deadline (the time a caller waits by default) may have passed. Handlers of long calls ask
/// `DBusMethodCall.checkStillWanted()` as they go and stop when the answer is no, instead of
/// working for nobody.
// @unchecked: `callerLeft` is only touched under `lock`; the rest is immutable.
final class CallAbandonment: @unchecked Sendable {
    let sender: String
    let deadline: ContinuousClock.Instant
    private let lock = ConditionLock()
    private var callerLeft = false

    init(sender: String, deadline: ContinuousClock.Instant) {
        self.sender = sender
        self.deadline = deadline
    }

    var hasCallerLeft: Bool { lock.withLock { callerLeft } }

    func noteCallerLeft() { lock.withLock { callerLeft = true } }
}

/// A server connection's calls still being handled, by caller, so that a caller leaving the bus
/// (NameOwnerChanged with no new owner, delivered after every call it sent) marks its calls.
// @unchecked: its tables are only touched under `lock`.
final class InFlightCalls: @unchecked Sendable {
    private let lock = ConditionLock()
    private var watching = false
    private var bySender: [String: [ObjectIdentifier: CallAbandonment]] = [:]
    private var abandoned = 0

    /// Marking calls needs the NameOwnerChanged subscription; without it nothing is kept.
    func startWatching() { lock.withLock { watching = true } }

    /// On the I/O thread, as the call's message is read: before any later message of the bus
    /// (the caller's departure) is.
    func register(_ call: CallAbandonment) {
        guard !call.sender.isEmpty else { return }
        lock.withLock {
            guard watching else { return }
            bySender[call.sender, default: [:]][ObjectIdentifier(call)] = call
        }
    }

    func unregister(_ call: CallAbandonment) {
        guard !call.sender.isEmpty else { return }
        lock.withLock {
            guard var calls = bySender[call.sender], calls.removeValue(forKey: ObjectIdentifier(call)) != nil else { return }
            bySender[call.sender] = calls.isEmpty ? nil : calls
        }
    }

    func callerLeft(_ sender: String) {
        let calls = lock.withLock { bySender.removeValue(forKey: sender) }
        calls?.values.forEach { $0.noteCallerLeft() }
    }

    /// Counts the calls handlers gave up on (each once).
    func noteAbandoned() { lock.withLock { abandoned += 1 } }

    var abandonedCount: Int { lock.withLock { abandoned } }
}
