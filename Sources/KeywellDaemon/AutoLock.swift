import Foundation
import KeywellCore
import KeywellSystem
import Logging

/// Locks keychains after their `lockAfterSeconds` without use.
///
/// One job on the timer thread waits for the engine's earliest idle deadline, then asks the
/// engine to lock what is due (the engine tracks use and sends the `locked` events). Use only
/// moves deadlines later, so item calls need not touch it; calls that can make a deadline
/// earlier (unlock, create, settings) call `rearm()`.
final class AutoLock: Sendable {
    private struct State {
        var started = false
        var pending: TimerThread.Token?
    }

    private let store: KeychainStore
    private let logger: Logger
    private let timers: TimerThread
    private let state = Protected(State())
    /// Lets a deadline that has just passed count as passed despite clock granularity.
    private let slack: TimeInterval = 0.005

    init(store: KeychainStore, logger: Logger, timers: TimerThread = .shared) {
        self.store = store
        self.logger = logger
        self.timers = timers
    }

    func start() {
        let first = state.withLock { state -> Bool in
            defer { state.started = true }
            return !state.started
        }
        if first { rearm() }
    }

    /// Looks at the deadlines again: the one pending job is replaced by one for the earliest.
    func rearm() {
        state.withLock { state in
            guard state.started else { return }
            // Read under the lock, so that of two rearms the later reading wins.
            let deadline = store.locking.nextIdleDeadline()
            if let pending = state.pending { timers.cancel(pending) }
            state.pending = deadline.map { deadline in
                // Capped: a keychain set to lock after centuries must not overflow the clock.
                let delay = min(max(0, deadline.timeIntervalSinceNow + slack), 1e9)
                return timers.schedule(after: .seconds(delay)) { [self] in lockDue() }
            }
        }
    }

    private func lockDue() {
        let locked = store.locking.lockIdleKeychains()
        if !locked.isEmpty {
            logger.info("locked after idle time: \(locked.joined(separator: ", "))")
        }
        rearm()
    }
}
