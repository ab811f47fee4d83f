import Foundation
import KeywellCore
import Logging

/// Locks keychains after their `lockAfterSeconds` without use.
///
/// One thread sleeps until the engine's earliest idle deadline, then asks the engine to lock what
/// is due (the engine tracks use and sends the `locked` events). Use only moves deadlines later,
/// so item calls need not wake it; calls that can make a deadline earlier (unlock, create,
/// settings) call `rearm()`.
final class AutoLock: @unchecked Sendable {
    private let store: KeychainStore
    private let logger: Logger
    private let condition = NSCondition()
    private var rearmed = false
    private var started = false
    /// Lets a deadline that has just passed count as passed despite clock granularity.
    private let slack: TimeInterval = 0.005

    init(store: KeychainStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    func start() {
        condition.lock()
        defer { condition.unlock() }
        guard !started else { return }
        started = true
        let thread = Thread { [self] in run() }
        thread.name = "auto-lock"
        thread.stackSize = 256 << 10
        thread.start()
    }

    /// Makes the timer look at the deadlines again.
    func rearm() {
        condition.lock()
        rearmed = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            let deadline = store.nextIdleDeadline()
            condition.lock()
            if !rearmed {
                if let deadline {
                    _ = condition.wait(until: deadline.addingTimeInterval(slack))
                } else {
                    condition.wait()
                }
            }
            rearmed = false
            condition.unlock()
            let locked = store.lockIdleKeychains()
            if !locked.isEmpty {
                logger.info("locked after idle time: \(locked.joined(separator: ", "))")
            }
        }
    }
}
