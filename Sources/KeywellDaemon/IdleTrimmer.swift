import Foundation
import KeywellSystem
import Logging
import Synchronization

/// When the daemon has had nothing to do for a while, it gives memory back: the library pages
/// its last calls touched (`ResidentMemoryTrim`) and the heap malloc keeps free. A login
/// keychain service is idle almost all the time; its footprint then should be what it holds,
/// not what it once touched. The first call afterwards pays a few page faults.
///
/// At most one check waits on the timer thread, due a quiet period after the last activity it
/// knows of; once trimmed, none waits until the next activity.
final class IdleTrimmer: Sendable {
    private struct State {
        var lastActivity = ContinuousClock.now
        var trimmedSinceActivity = false
        var checkPending = false
    }

    private let quietPeriod: Duration
    private let logger: Logger
    private let timers: TimerThread
    private let state = Mutex(State())

    init(quietPeriod: Duration = .seconds(10), logger: Logger, timers: TimerThread = .shared) {
        self.quietPeriod = quietPeriod
        self.logger = logger
        self.timers = timers
    }

    /// Called for every request (D-Bus or control socket): a clock read under a lock, and a
    /// timer job only for the first request after a trim.
    func noteActivity() {
        let needsCheck = state.withLock { state -> Bool in
            state.lastActivity = ContinuousClock.now
            state.trimmedSinceActivity = false
            defer { state.checkPending = true }
            return !state.checkPending
        }
        if needsCheck { scheduleCheck(after: quietPeriod) }
    }

    /// Trims after every quiet period that follows activity (start-up counts as activity).
    func start() {
        noteActivity()
    }

    private func scheduleCheck(after delay: Duration) {
        timers.schedule(after: delay) { [self] in check() }
    }

    private func check() {
        enum Next { case trim, later(Duration), nothing }
        let next = state.withLock { state -> Next in
            guard !state.trimmedSinceActivity else {
                state.checkPending = false
                return .nothing
            }
            let quiet = ContinuousClock.now - state.lastActivity
            guard quiet >= quietPeriod else { return .later(quietPeriod - quiet) }
            state.trimmedSinceActivity = true
            state.checkPending = false
            return .trim
        }
        switch next {
        case .trim: trim()
        case .later(let remaining): scheduleCheck(after: remaining)
        case .nothing: break
        }
    }

    private func trim() {
        let pages = ResidentMemoryTrim.apply()
        _ = MallocTrim.function?(0)
        logger.debug("idle: gave back \(pages) KiB of library pages")
    }
}

/// glibc's `malloc_trim`, which Swift's Glibc module does not export; looked up at run time.
private enum MallocTrim {
    typealias Function = @convention(c) (Int) -> Int32
    static let function: Function? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }()
}
