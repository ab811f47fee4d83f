#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's one timer thread: every delayed job (idle locking, idle trimming, a paced
/// Secret Service signal, an async D-Bus call's timeout) registers here instead of owning a
/// sleeping thread (docs/design.md, "Threads").
///
/// Jobs run on the timer thread one after another, so they must be short and must never wait
/// for a person (no prompts) or for another job. The thread starts with the first job and
/// sleeps without a timeout while no job is pending.
///
/// Deadlines count time the machine spent suspended (CLOCK_BOOTTIME), so a job due during a
/// suspend runs soon after resume; as a timed wait can only sleep on CLOCK_MONOTONIC, which
/// stops during suspend, the thread sleeps at most `longestSleep` at a time while a job is pending.
package final class TimerThread: Sendable {
    /// A scheduled job, to cancel it.
    package struct Token: Hashable, Sendable {
        fileprivate let number: UInt64
    }

    /// The one every part of the process shares.
    package static let shared = TimerThread(name: "timers")

    /// How late a job due during a suspend may run after resume.
    package static let longestSleep: Duration = .seconds(5)

    private struct Job {
        let due: UInt64
        let body: @Sendable () -> Void
    }

    private struct State {
        var jobs: [UInt64: Job] = [:]
        var nextNumber: UInt64 = 0
        var started = false
    }

    private let name: String
    private let condition = ConditionLock()
    // Guarded by `condition`; a Mutex cannot wait, so the state lives beside the ConditionLock.
    private nonisolated(unsafe) var state = State()

    package init(name: String) {
        self.name = name
    }

    /// Runs `body` on the timer thread once `delay` has passed (at once when it is not positive).
    @discardableResult
    package func schedule(after delay: Duration, _ body: @escaping @Sendable () -> Void) -> Token {
        let due = Self.bootNanoseconds() &+ min(delay.saturatingNanoseconds, UInt64.max / 4)
        let (token, startThread) = condition.withLock { () -> (Token, Bool) in
            state.nextNumber += 1
            let number = state.nextNumber
            state.jobs[number] = Job(due: due, body: body)
            let startThread = !state.started
            state.started = true
            condition.signal()
            return (Token(number: number), startThread)
        }
        if startThread {
            startDetachedThread(name: name, stackSize: 256 << 10) { [self] in run() }
        }
        return token
    }

    /// Drops a job that has not started; a job already running or done is left alone.
    package func cancel(_ token: Token) {
        condition.withLock { _ = state.jobs.removeValue(forKey: token.number) }
    }

    /// How many jobs wait (for tests).
    package var pendingCount: Int { condition.withLock { state.jobs.count } }

    private func run() {
        while true {
            let due = condition.withLock { () -> [Job] in
                while true {
                    let now = Self.bootNanoseconds()
                    let ready = state.jobs.filter { $0.value.due <= now }
                    if !ready.isEmpty {
                        for number in ready.keys { state.jobs.removeValue(forKey: number) }
                        return ready.values.sorted { $0.due < $1.due }
                    }
                    guard let earliest = state.jobs.values.map(\.due).min() else {
                        condition.wait(untilNanoseconds: nil)
                        continue
                    }
                    let sleep = min(earliest - now, Self.longestSleep.saturatingNanoseconds)
                    condition.wait(untilNanoseconds: monotonicNanoseconds() &+ sleep)
                }
            }
            for job in due { job.body() }
        }
    }

    /// CLOCK_BOOTTIME in nanoseconds: monotonic, and counting time spent suspended.
    private static func bootNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
