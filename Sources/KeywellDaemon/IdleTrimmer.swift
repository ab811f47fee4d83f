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
/// After a burst (`burstCalls` requests or more since the library pages last went: a python
/// program storing a thousand secrets, a migration, a backup), the first step comes after a
/// shorter quiet (`burstQuietPeriod`: calls of a burst follow each other within milliseconds)
/// and gives back the library pages too: the burst ran much of the daemon's code (and with a DH session much of
/// libcrypto) once, and would otherwise keep it resident for the ten seconds; the next call's
/// page faults are then shared by all the calls of the burst (docs/performance.md, "The daemon").
/// A burst stalled for longer than that quiet (a loaded machine) trims at each stall, each after
/// at least a tenth as many calls, and once more after its last call.
/// Work a burst leaves for later (a big collection's paced `Items` signal) runs after that step
/// and reports through `deferredWorkDone`, which repeats the step the quiet period already took.
///
/// A keychain that locks (by a call, a timer, sleep or the screen lock) trims both at once: what
/// its unlocked use made resident (SQLite's caches, decrypted rows, library pages) is not needed
/// until it is unlocked again, and a lock is often the last thing before a long idle.
///
/// At most one check acts, due when the next step is (a far one a request replaces returns
/// when it fires); once both steps are done, none waits until the next activity.
final class IdleTrimmer: Sendable {
    private struct State {
        var lastActivity = ContinuousClock.now
        var heapTrimmedSinceActivity = false
        var trimmedSinceActivity = false
        /// The library pages went since the last request (a burst, the idle step or a lock).
        var librariesTrimmedSinceActivity = false
        var checkPending = false
        /// The waiting check is the idle step's, seconds away: a request must not wait for it.
        var pendingIsFar = false
        /// Only the check of the latest schedule acts; one replaced by a nearer one returns.
        var checkGeneration: UInt64 = 0
        /// Requests since the library pages last went.
        var callsSinceFullTrim = 0
        /// A burst is going on: its quiet steps (a loaded machine stalls a burst for longer than
        /// the burst's quiet now and then) all give the library pages back, until one follows
        /// fewer than `burstCalls / 10` requests, or the idle step or a lock comes.
        var inBurst = false
    }

    /// Requests after which the first quiet half second trims everything: more calls than any
    /// single lookup or store by a client makes (libsecret's store is about ten), fewer than
    /// a program filling a keychain.
    static let burstCalls = 100
    /// The quiet that ends a burst.
    static let burstQuietPeriod: Duration = .milliseconds(200)

    private let quietPeriod: Duration
    private let heapQuietPeriod: Duration
    private let logger: Logger
    private let timers: TimerThread
    /// Gives caches the daemon keeps for speed back to malloc, before each heap trim.
    private let releaseCaches: @Sendable () -> Void
    /// Frees state that only the next burst of work needs again (OpenSSL's library context for
    /// the DH sessions), before the full trims only: making it again costs about 0.6 ms.
    private let releaseIdleState: @Sendable () -> Void
    private let state = Protected(State())

    init(
        quietPeriod: Duration = .seconds(10), heapQuietPeriod: Duration = .milliseconds(500),
        logger: Logger, timers: TimerThread = .shared, releaseCaches: @escaping @Sendable () -> Void = {},
        releaseIdleState: @escaping @Sendable () -> Void = {}
    ) {
        self.quietPeriod = quietPeriod
        self.heapQuietPeriod = heapQuietPeriod
        self.logger = logger
        self.timers = timers
        self.releaseCaches = releaseCaches
        self.releaseIdleState = releaseIdleState
    }

    /// Called for every request (D-Bus or control socket): a clock read under a lock, and a
    /// timer job only for the first request after a trim (the idle step's check, seconds away,
    /// is replaced by a near one: the first step after these requests must not wait for it).
    func noteActivity() {
        let generation = state.withLock { state -> UInt64? in
            state.lastActivity = ContinuousClock.now
            state.callsSinceFullTrim &+= 1
            state.heapTrimmedSinceActivity = false
            state.trimmedSinceActivity = false
            state.librariesTrimmedSinceActivity = false
            guard !state.checkPending || state.pendingIsFar else { return nil }
            state.checkPending = true
            state.pendingIsFar = false
            state.checkGeneration &+= 1
            return state.checkGeneration
        }
        if let generation { scheduleCheck(after: heapQuietPeriod, generation) }
    }

    /// The quiet after which the first step is due: shorter after a burst.
    private func firstStepQuiet(_ state: State) -> Duration {
        state.inBurst || state.callsSinceFullTrim >= Self.burstCalls ? min(Self.burstQuietPeriod, heapQuietPeriod) : heapQuietPeriod
    }

    /// Trims both steps now on the timer thread, not the caller's (a lock's reply does not wait
    /// for it), and once more at the idle step: what runs after a lock (its signals, the logout
    /// that caused it, the reply) faults code back in after this trim.
    func trimSoon() {
        _ = timers.schedule(after: .zero) { [self] in
            let generation = state.withLock { state -> UInt64? in
                state.heapTrimmedSinceActivity = true
                state.trimmedSinceActivity = false
                state.librariesTrimmedSinceActivity = true
                state.callsSinceFullTrim = 0
                state.inBurst = false
                guard !state.checkPending else { return nil }
                state.checkPending = true
                state.pendingIsFar = true
                state.checkGeneration &+= 1
                return state.checkGeneration
            }
            trimEverything("lock")
            if let generation { scheduleCheck(after: quietPeriod, generation) }
        }
    }

    /// Work done after the calls, off any request (on the timer thread): what it made resident
    /// goes again as the quiet period's step already took it; before that step, nothing (the
    /// step is still to come).
    func deferredWorkDone() {
        enum Again { case none, heap, everything }
        let again = state.withLock { state -> Again in
            guard state.heapTrimmedSinceActivity else { return .none }
            return state.librariesTrimmedSinceActivity ? .everything : .heap
        }
        switch again {
        case .none: break
        case .heap: trimHeap()
        case .everything: trimEverything("after deferred work")
        }
    }

    /// Trims after every quiet period that follows activity (start-up counts as activity).
    func start() {
        noteActivity()
    }

    private func scheduleCheck(after delay: Duration, _ generation: UInt64) {
        _ = timers.schedule(after: delay) { [self] in check(generation) }
    }

    private func check(_ generation: UInt64) {
        enum Next { case heap(then: Duration), burst(then: Duration), idle, later(Duration), nothing, replaced }
        let next = state.withLock { state -> Next in
            guard generation == state.checkGeneration else { return .replaced }
            let quiet = ContinuousClock.now - state.lastActivity
            if !state.heapTrimmedSinceActivity {
                let due = firstStepQuiet(state)
                guard quiet >= due else { return .later(due - quiet) }
                state.heapTrimmedSinceActivity = true
                let then = max(.zero, quietPeriod - quiet)
                if state.callsSinceFullTrim >= Self.burstCalls || state.inBurst {
                    state.inBurst = state.callsSinceFullTrim >= Self.burstCalls / 10
                    // The idle step still follows: work left for later may run in between.
                    state.librariesTrimmedSinceActivity = true
                    state.callsSinceFullTrim = 0
                    state.pendingIsFar = true
                    return .burst(then: then)
                }
                state.pendingIsFar = true
                return .heap(then: then)
            }
            guard !state.trimmedSinceActivity else {
                state.checkPending = false
                return .nothing
            }
            guard quiet >= quietPeriod else { return .later(quietPeriod - quiet) }
            state.trimmedSinceActivity = true
            state.librariesTrimmedSinceActivity = true
            state.checkPending = false
            state.callsSinceFullTrim = 0
            state.inBurst = false
            return .idle
        }
        switch next {
        case .heap(let then):
            trimHeap()
            scheduleCheck(after: then, generation)
        case .burst(let then):
            trimEverything("burst")
            scheduleCheck(after: then, generation)
        case .idle: trimEverything("idle")
        case .later(let remaining): scheduleCheck(after: remaining, generation)
        case .nothing, .replaced: break
        }
    }

    private func trimHeap() {
        releaseCaches()
        MallocTuning.trim()
    }

    private func trimEverything(_ reason: String) {
        // Before the library pages go: releasing runs SQLite's and Swift's code, which would
        // fault those pages straight back in.
        releaseCaches()
        releaseIdleState()
        // The heap trim is inside, before the drops; so is the log line: anything run after the
        // drops faults its code straight back in.
        ResidentMemoryTrim.apply { pages in logger.debug("\(reason): gave back \(pages) KiB of library pages") }
    }
}
