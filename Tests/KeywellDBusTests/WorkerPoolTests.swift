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
}
