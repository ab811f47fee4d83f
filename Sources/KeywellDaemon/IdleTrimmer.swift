import Foundation
import Logging

/// When the daemon has had nothing to do for a while, it gives memory back, in two steps:
///
/// - half a second after the last call, the heap malloc keeps free (`MallocTuning.trim`): a burst
///   of calls (a thousand adds, a migration) leaves freed blocks behind that only this returns,
///   and giving them back costs the next burst nothing but fresh zero pages;
/// - ten seconds after it, also the library pages the calls touched (`ResidentMemoryTrim`): a
///   login keychain service is idle almost all the time, and its footprint then should be what
///   it holds, not what it once touched. The first call afterwards pays a few page faults.
///
/// A keychain that locks (by a call, a timer, sleep or the screen lock) trims both at once: what
/// its unlocked use made resident (SQLite's caches, decrypted rows, library pages) is not needed
/// until it is unlocked again, and a lock is often the last thing before a long idle.
final class IdleTrimmer: @unchecked Sendable {
    private let quietPeriod: Duration
    private let heapQuietPeriod: Duration
    private let logger: Logger
    private let condition = NSCondition()
    private var lastActivity = ContinuousClock.now
    private var heapTrimmedSinceActivity = false
    private var trimmedSinceActivity = false
    private var trimRequested = false
    /// The trimmer thread is waiting with nothing due: the next call wakes it to count again.
    private var sleepingUntilActivity = false

    init(quietPeriod: Duration = .seconds(10), heapQuietPeriod: Duration = .milliseconds(500), logger: Logger) {
        self.quietPeriod = quietPeriod
        self.heapQuietPeriod = heapQuietPeriod
        self.logger = logger
    }

    /// Called for every request (D-Bus or control socket): a clock read under a lock, and a
    /// wake-up only for the first call after the daemon went fully idle.
    func noteActivity() {
        condition.withLock {
            lastActivity = ContinuousClock.now
            heapTrimmedSinceActivity = false
            trimmedSinceActivity = false
            if sleepingUntilActivity {
                sleepingUntilActivity = false
                condition.signal()
            }
        }
    }

    /// Trims now on the trimmer's thread, not the caller's (a lock's reply does not wait for it).
    func trimSoon() {
        condition.withLock {
            trimRequested = true
            condition.signal()
        }
    }

    private enum Work { case heap, everything(reason: String) }

    /// The next trim that is due, else nil after waiting until one could be (or a request).
    private func nextWork() -> Work? {
        condition.withLock { () -> Work? in
            if trimRequested {
                trimRequested = false
                heapTrimmedSinceActivity = true
                trimmedSinceActivity = true
                return .everything(reason: "lock")
            }
            let now = ContinuousClock.now
            if !heapTrimmedSinceActivity {
                let due = lastActivity + heapQuietPeriod
                if now >= due {
                    heapTrimmedSinceActivity = true
                    return .heap
                }
                _ = condition.wait(until: Date(timeIntervalSinceNow: Self.seconds(due - now)))
                return nil
            }
            if !trimmedSinceActivity {
                let due = lastActivity + quietPeriod
                if now >= due {
                    trimmedSinceActivity = true
                    return .everything(reason: "idle")
                }
                _ = condition.wait(until: Date(timeIntervalSinceNow: Self.seconds(due - now)))
                return nil
            }
            sleepingUntilActivity = true
            condition.wait()
            return nil
        }
    }

    /// Trims after every quiet period that follows activity (start-up counts as activity), and
    /// whenever `trimSoon` asks.
    func start() {
        let thread = Thread { [self] in
            while true {
                switch nextWork() {
                case .heap?: MallocTuning.trim()
                case .everything(let reason)?: trimEverything(reason)
                case nil: continue
                }
            }
        }
        thread.name = "idle-trim"
        thread.stackSize = 128 << 10
        thread.start()
    }

    private func trimEverything(_ reason: String) {
        let pages = ResidentMemoryTrim.apply()
        MallocTuning.trim()
        logger.debug("\(reason): gave back \(pages) KiB of library pages")
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
