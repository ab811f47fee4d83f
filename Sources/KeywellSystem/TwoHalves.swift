#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Pure per-item work of one big call (opening and sealing the secrets of a GetSecrets of a
/// thousand items) split over the machine's two cores: while keywelld answers, its client and
/// the bus wait for the reply, so a second core is idle (docs/performance.md, "GetSecrets of
/// many items").
///
/// One helper thread, started on first use and ended after `idleTimeout` without work (an idle
/// daemon keeps no thread or stack for it). It can never hold a call up: a caller that finds
/// it busy (another call's half) does both halves itself, and one whose half the helper has
/// not taken by the time its own is done takes that back and does it too. The halves must be
/// independent (disjoint indices); `body` runs on both threads at once and returns before
/// `forEachHalf` does.
package enum TwoHalves {
    /// Below this many items one thread does it all: handing a half over costs a wake-up.
    package static let minimumItems = 64
    /// A helper without work for this long ends (the daemon's idle trim comes after it).
    static let idleTimeout: Duration = .seconds(5)

    /// Calls `body` with `0..<count` split in two (the caller's half first); for fewer than
    /// `minimum` items, or one core, once with all of it.
    package static func forEachHalf(count: Int, minimum: Int = minimumItems, _ body: (Range<Int>) -> Void) {
        guard count >= max(minimum, 2), Helper.shared.cores > 1 else {
            body(0..<count)
            return
        }
        let middle = count / 2
        withoutActuallyEscaping(body) { escaping in
            let job = Job(body: escaping, range: middle..<count)
            let posted = Helper.shared.post(job)
            body(0..<middle)
            if !posted || Helper.shared.takeBackOrWait(job) { body(middle..<count) }
            // The helper is done with it: whoever still holds the job, the closure is not
            // kept past this call (`withoutActuallyEscaping` checks).
            job.body = nil
        }
    }

    /// One posted half. `body` does not escape `forEachHalf`: the caller waits for the helper to
    /// finish it, or takes it back, before returning.
    // @unchecked: `state` is only touched under the helper's lock; `body` is run by one thread
    // and cleared by the caller once no thread runs it.
    private final class Job: @unchecked Sendable {
        enum State { case posted, running, done }
        var body: ((Range<Int>) -> Void)?
        let range: Range<Int>
        var state = State.posted

        init(body: @escaping (Range<Int>) -> Void, range: Range<Int>) {
            self.body = body
            self.range = range
        }

        func run() { body?(range) }
    }

    // @unchecked: every field is only touched under `lock`.
    private final class Helper: @unchecked Sendable {
        static let shared = Helper()

        let cores = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        private let lock = ConditionLock()
        private var job: Job?
        private var running = false
        /// The thread exists and waits for `job`, or runs it: nothing else may be posted.
        private var busy = false

        /// Hands `job` to the helper (starting it if needed); false when it is busy.
        func post(_ job: Job) -> Bool {
            lock.lock()
            guard !busy else {
                lock.unlock()
                return false
            }
            busy = true
            self.job = job
            let start = !running
            running = true
            lock.unlock()
            // Woken once the lock is free: woken under it, the helper would wake only to wait
            // for the lock (two more system calls on each side, in a profile of the hand-over).
            lock.broadcast()
            if start { startDetachedThread(name: "kw-halves", stackSize: 256 << 10) { [self] in loop() } }
            return true
        }

        /// True when the helper had not taken `job` (the caller runs it now); else waits until
        /// the helper finished it and returns false.
        func takeBackOrWait(_ job: Job) -> Bool {
            lock.lock()
            defer { lock.unlock() }
            if job.state == .posted {
                job.state = .done
                self.job = nil
                busy = false
                return true
            }
            while job.state != .done { lock.wait(untilNanoseconds: nil) }
            return false
        }

        private func loop() {
            lock.lock()
            while true {
                if let job, job.state == .posted {
                    job.state = .running
                    lock.unlock()
                    job.run()
                    lock.lock()
                    job.state = .done
                    self.job = nil
                    busy = false
                    lock.unlock()
                    lock.broadcast()
                    lock.lock()
                    continue
                }
                // Timed out with nothing posted: end (the next post starts a new thread).
                if !lock.wait(untilNanoseconds: deadline(after: TwoHalves.idleTimeout)), job == nil {
                    running = false
                    lock.unlock()
                    return
                }
            }
        }
    }
}
