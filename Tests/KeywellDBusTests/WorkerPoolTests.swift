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

    /// A job a worker's job leaves behind runs on that same worker once the first has returned,
    /// before anything else, while another idle worker stays asleep; from outside the pool it is
    /// an ordinary job.
    @Test func aJobLeftBehindRunsOnTheSameWorkerAfterItsJob() throws {
        let pool = WorkerPool(name: "test-after", keepAlive: 2, maximumThreads: 2)
        defer { pool.stop() }
        let order = LockedValue<[String]>([])
        let threads = LockedValue<[String: pthread_t]>([:])
        let done = DispatchSemaphore(value: 0)
        // Two workers, then both idle: a plain submit from a job would wake the other one.
        let warm = DispatchSemaphore(value: 0)
        let hold = DispatchSemaphore(value: 0)
        pool.submit { warm.signal(); hold.wait() }
        pool.submit { warm.signal(); hold.wait() }
        for _ in 0..<2 { #expect(warm.wait(timeout: .now() + 10) == .success) }
        hold.signal()
        hold.signal()
        usleep(20_000)
        pool.submit {
            threads.value["first"] = pthread_self()
            pool.submitAfterCurrentJob {
                threads.value["after"] = pthread_self()
                order.value.append("after")
                done.signal()
            }
            // Still inside the first job: the one left behind has not run yet.
            usleep(50_000)
            order.value.append("first")
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(order.value == ["first", "after"])
        let first = try #require(threads.value["first"]), after = try #require(threads.value["after"])
        #expect(pthread_equal(first, after) != 0)

        let outside = DispatchSemaphore(value: 0)
        pool.submitAfterCurrentJob { outside.signal() }
        #expect(outside.wait(timeout: .now() + 10) == .success)
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

    /// Idle workers above `keepAlive` exit after their timeout (a daemon's pools keep one or
    /// none, docs/performance.md "The daemon"); the pool starts new ones for later work.
    @Test(arguments: [0, 1])
    func idleWorkersAboveKeepAliveExit(keepAlive: Int) throws {
        let name = "test-exit-\(keepAlive)"
        let pool = WorkerPool(name: name, keepAlive: keepAlive, maximumThreads: 3, idleTimeout: .milliseconds(20))
        defer { pool.stop() }
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        for _ in 0..<3 { pool.submit { started.signal(); release.wait() } }
        for _ in 0..<3 { #expect(started.wait(timeout: .now() + 10) == .success) }
        #expect(threads(named: name) == 3)
        for _ in 0..<3 { release.signal() }
        let deadline = ContinuousClock.now + .seconds(10)
        while threads(named: name) > keepAlive, ContinuousClock.now < deadline { usleep(10_000) }
        #expect(threads(named: name) == keepAlive)
        let ran = DispatchSemaphore(value: 0)
        pool.submit { ran.signal() }
        #expect(ran.wait(timeout: .now() + 10) == .success)
    }

    /// A serial lane runs its jobs in the order given and never two at once, on a pool that
    /// has threads to spare.
    @Test func serialLaneRunsJobsInOrderOneAtATime() {
        let pool = WorkerPool(name: "test-lane", keepAlive: 0, maximumThreads: 8, idleTimeout: .milliseconds(20))
        defer { pool.stop() }
        let lane = SerialLane(workers: pool)
        let order = LockedValue<[Int]>([]), running = LockedValue(0), overlapped = LockedValue(false)
        let done = DispatchSemaphore(value: 0)
        let count = 500
        for index in 0..<count {
            lane.async {
                if running.mutate({ $0 += 1; return $0 }) > 1 { overlapped.value = true }
                order.mutate { $0.append(index) }
                running.mutate { $0 -= 1 }
                if index == count - 1 { done.signal() }
            }
            // Some jobs find the lane idle again, so that a new drain starts.
            if index % 50 == 0 { usleep(30_000) }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(order.value == Array(0..<count))
        #expect(!overlapped.value)
    }
}

/// Threads of this process whose name is `name`.
private func threads(named name: String) -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { task in
        (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) == String(name.prefix(15))
    }.count
}
