import Synchronization
import Testing

@testable import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// The one timer thread: order, cancellation, and that every job runs on the same thread.
@Suite struct TimerThreadTests {
    /// What the jobs saw, and a way to wait for the last one.
    final class Log: Sendable {
        struct Entry: Equatable {
            var name: String
            var thread: pthread_t
        }
        private let state = ConditionLock()
        private nonisolated(unsafe) var entries: [Entry] = []

        func append(_ name: String) {
            state.withLock {
                entries.append(Entry(name: name, thread: pthread_self()))
                state.broadcast()
            }
        }

        /// Waits (hang guard: 60 s) until `name` ran; returns everything so far.
        func waitFor(_ name: String) -> [Entry] {
            let deadline = deadline(after: .seconds(60))
            return state.withLock {
                while !entries.contains(where: { $0.name == name }) {
                    if !state.wait(untilNanoseconds: deadline) { break }
                }
                return entries
            }
        }
    }

    @Test func jobsRunInTheOrderTheyAreDueOnOneThread() {
        let timers = TimerThread(name: "timers-test")
        let log = Log()
        timers.schedule(after: .milliseconds(300)) { log.append("third") }
        timers.schedule(after: .milliseconds(100)) { log.append("second") }
        timers.schedule(after: .zero) { log.append("first") }
        let entries = log.waitFor("third")
        #expect(entries.map(\.name) == ["first", "second", "third"])
        #expect(Set(entries.map { UInt($0.thread) }).count == 1)
        #expect(entries.first.map { pthread_equal($0.thread, pthread_self()) == 0 } == true)
        #expect(timers.pendingCount == 0)
    }

    @Test func aCancelledJobNeverRuns() {
        let timers = TimerThread(name: "timers-test")
        let log = Log()
        let cancelled = timers.schedule(after: .milliseconds(50)) { log.append("cancelled") }
        timers.cancel(cancelled)
        // Due after the cancelled one: once it ran, the cancelled one would have too.
        timers.schedule(after: .milliseconds(150)) { log.append("later") }
        #expect(log.waitFor("later").map(\.name) == ["later"])
    }

    @Test func aJobCanScheduleTheNextOne() {
        let timers = TimerThread(name: "timers-test")
        let log = Log()
        timers.schedule(after: .milliseconds(10)) {
            log.append("one")
            timers.schedule(after: .milliseconds(10)) { log.append("two") }
        }
        #expect(log.waitFor("two").map(\.name) == ["one", "two"])
    }
}
