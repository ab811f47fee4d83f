import Foundation
import Logging

/// When the daemon has had nothing to do for a while, it gives memory back: the library pages
/// its last calls touched (`ResidentMemoryTrim`) and the heap malloc keeps free. A login
/// keychain service is idle almost all the time; its footprint then should be what it holds,
/// not what it once touched. The first call afterwards pays a few page faults.
///
/// A keychain that locks (by a call, a timer, sleep or the screen lock) trims at once too: what
/// its unlocked use made resident (SQLite's caches, decrypted rows, library pages) is not needed
/// until it is unlocked again, and a lock is often the last thing before a long idle.
final class IdleTrimmer: @unchecked Sendable {
    private let quietPeriod: Duration
    private let logger: Logger
    private let condition = NSCondition()
    private var lastActivity = ContinuousClock.now
    private var trimmedSinceActivity = false
    private var trimRequested = false

    init(quietPeriod: Duration = .seconds(10), logger: Logger) {
        self.quietPeriod = quietPeriod
        self.logger = logger
    }

    /// Called for every request (D-Bus or control socket); only a clock read under a lock.
    func noteActivity() {
        condition.withLock {
            lastActivity = ContinuousClock.now
            trimmedSinceActivity = false
        }
    }

    /// Trims now on the trimmer's thread, not the caller's (a lock's reply does not wait for it).
    func trimSoon() {
        condition.withLock {
            trimRequested = true
            condition.signal()
        }
    }

    /// Trims after every quiet period that follows activity (start-up counts as activity), and
    /// whenever `trimSoon` asks.
    func start() {
        let thread = Thread { [self] in
            while true {
                let reason = condition.withLock { () -> String? in
                    if !trimRequested { _ = condition.wait(until: Date(timeIntervalSinceNow: 1)) }
                    if trimRequested {
                        trimRequested = false
                        return "lock"
                    }
                    guard !trimmedSinceActivity, ContinuousClock.now - lastActivity >= quietPeriod else { return nil }
                    trimmedSinceActivity = true
                    return "idle"
                }
                if let reason { trim(reason) }
            }
        }
        thread.name = "idle-trim"
        thread.stackSize = 128 << 10
        thread.start()
    }

    private func trim(_ reason: String) {
        let pages = ResidentMemoryTrim.apply()
        MallocTuning.trim()
        logger.debug("\(reason): gave back \(pages) KiB of library pages")
    }
}
