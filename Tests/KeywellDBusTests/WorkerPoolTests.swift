import Foundation
import Testing

@testable import KeywellDBus

@Suite("Worker pool")
struct WorkerPoolTests {
    /// The connection loop hands itself only to a thread that can run it now: behind busy workers
    /// it would stall, and their nested calls' replies with it.
    @Test func submitToRunNowRefusesWhenEveryThreadIsBusyAtTheLimit() throws {
        let pool = WorkerPool(name: "test-worker", keepAlive: 2, maximumThreads: 2)
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            #expect(pool.submitToRunNow { started.signal(); release.wait() })
        }
        for _ in 0..<2 { #expect(started.wait(timeout: .now() + 10) == .success) }
        let refusedRan = LockedValue(false)
        #expect(!pool.submitToRunNow { refusedRan.value = true })
        // A plain submit queues behind the busy workers instead.
        let queuedRan = DispatchSemaphore(value: 0)
        pool.submit { queuedRan.signal() }
        #expect(queuedRan.wait(timeout: .now() + 0.2) == .timedOut)
        release.signal()
        release.signal()
        #expect(queuedRan.wait(timeout: .now() + 10) == .success)

        // Once a worker waits for work again, a job that must run now is taken.
        let ranNow = DispatchSemaphore(value: 0)
        let deadline = ContinuousClock.now + .seconds(10)
        while !pool.submitToRunNow({ ranNow.signal() }) {
            try #require(ContinuousClock.now < deadline, "no worker became idle")
            usleep(1000)
        }
        #expect(ranNow.wait(timeout: .now() + 10) == .success)
        #expect(!refusedRan.value)

        pool.stop()
        #expect(!pool.submitToRunNow {})
    }

    /// A kept worker that has waited out its idle timeout gives back its stack and then waits
    /// without one: work submitted later still wakes it, and runs at once.
    @Test func keptWorkersTakeWorkAfterTheirIdleTimeout() throws {
        let pool = WorkerPool(name: "test-parked", keepAlive: 1, maximumThreads: 1, idleTimeout: .milliseconds(20))
        defer { pool.stop() }
        for round in 0..<3 {
            let ran = DispatchSemaphore(value: 0)
            #expect(pool.submitToRunNow { ran.signal() }, "round \(round): the kept worker was not idle")
            #expect(ran.wait(timeout: .now() + 10) == .success, "round \(round): the job did not run")
            // Well past the timeout: the worker has given back its stack and parked.
            usleep(150_000)
        }
    }
}
