import Foundation
import KeywellSystem
import Logging

/// When the daemon has had nothing to do for a while, it gives memory back, in two steps:
///
/// - half a second after the last call, the keychains' SQLite page caches (`releaseCaches`), then
///   the heap malloc keeps free (`MallocTuning.trim`): a burst of calls (a thousand adds, a
///   migration) leaves cached pages and freed blocks behind that only this returns, and giving
///   them back costs the next burst nothing but fresh zero pages and copies from the kernel's
///   file cache;
/// - ten seconds after it, also the library pages the calls touched (`ResidentMemoryTrim`): a
///   login keychain service is idle almost all the time, and its footprint then should be what
///   it holds, not what it once touched. The first call afterwards pays a few page faults.
///
/// A keychain that locks (by a call, a timer, sleep or the screen lock) trims both at once: what
/// its unlocked use made resident (SQLite's caches, decrypted rows, library pages) is not needed
/// until it is unlocked again, and a lock is often the last thing before a long idle.
///
/// At most one check waits on the timer thread, due when the next step is; once both steps are
/// done, none waits until the next activity.
final class IdleTrimmer: Sendable {
    private struct State {
        var lastActivity = ContinuousClock.now
        var heapTrimmedSinceActivity = false
        var trimmedSinceActivity = false
        var checkPending = false
    }

    private let quietPeriod: Duration
    private let heapQuietPeriod: Duration
    private let logger: Logger
    private let timers: TimerThread
    /// Gives caches the daemon keeps for speed back to malloc, before each heap trim.
    private let releaseCaches: @Sendable () -> Void
    private let state = Protected(State())

    init(
        quietPeriod: Duration = .seconds(10), heapQuietPeriod: Duration = .milliseconds(500), logger: Logger,
        timers: TimerThread = .shared, releaseCaches: @escaping @Sendable () -> Void = {}
    ) {
        self.quietPeriod = quietPeriod
        self.heapQuietPeriod = heapQuietPeriod
        self.logger = logger
        self.timers = timers
        self.releaseCaches = releaseCaches
    }

    /// Called for every request (D-Bus or control socket): a clock read under a lock, and a
    /// timer job only for the first request after both trims.
    func noteActivity() {
        let needsCheck = state.withLock { state -> Bool in
            state.lastActivity = ContinuousClock.now
            state.heapTrimmedSinceActivity = false
            state.trimmedSinceActivity = false
            defer { state.checkPending = true }
            return !state.checkPending
        }
        if needsCheck { scheduleCheck(after: heapQuietPeriod) }
    }

    /// Trims both steps now on the timer thread, not the caller's (a lock's reply does not wait for it).
    func trimSoon() {
        _ = timers.schedule(after: .zero) { [self] in
            state.withLock { state in
                state.heapTrimmedSinceActivity = true
                state.trimmedSinceActivity = true
            }
            trimEverything("lock")
        }
    }

    /// Trims after every quiet period that follows activity (start-up counts as activity).
    func start() {
        noteActivity()
    }

    private func scheduleCheck(after delay: Duration) {
        _ = timers.schedule(after: delay) { [self] in check() }
    }

    private func check() {
        enum Next { case heap(then: Duration), everything, later(Duration), nothing }
        let next = state.withLock { state -> Next in
            let quiet = ContinuousClock.now - state.lastActivity
            if !state.heapTrimmedSinceActivity {
                guard quiet >= heapQuietPeriod else { return .later(heapQuietPeriod - quiet) }
                state.heapTrimmedSinceActivity = true
                return .heap(then: max(.zero, quietPeriod - quiet))
            }
            guard !state.trimmedSinceActivity else {
                state.checkPending = false
                return .nothing
            }
            guard quiet >= quietPeriod else { return .later(quietPeriod - quiet) }
            state.trimmedSinceActivity = true
            state.checkPending = false
            return .everything
        }
        switch next {
        case .heap(let then):
            releaseCaches()
            MallocTuning.trim()
            scheduleCheck(after: then)
        case .everything: trimEverything("idle")
        case .later(let remaining): scheduleCheck(after: remaining)
        case .nothing: break
        }
    }

    private func trimEverything(_ reason: String) {
        // Before the library pages go: releasing runs SQLite's and Swift's code, which would
        // fault those pages straight back in.
        releaseCaches()
        let pages = ResidentMemoryTrim.apply()
        MallocTuning.trim()
        logger.debug("\(reason): gave back \(pages) KiB of library pages")
    }
}
