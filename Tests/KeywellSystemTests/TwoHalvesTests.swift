import Testing

@testable import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// `TwoHalves` runs every index once, whoever runs it, and never waits on a busy helper.
@Suite struct TwoHalvesTests {
    /// Counts of each index's runs, and the threads that ran any.
    private func run(_ count: Int, minimum: Int = TwoHalves.minimumItems) -> (runs: [Int], threads: Set<UInt>) {
        let runs = UnsafeMutableBufferPointer<Int>.allocate(capacity: max(count, 1))
        runs.initialize(repeating: 0)
        defer { runs.deallocate() }
        let threads = Protected<Set<UInt>>([])
        TwoHalves.forEachHalf(count: count, minimum: minimum) { range in
            threads.withLock { _ = $0.insert(UInt(pthread_self())) }
            for index in range { runs[index] += 1 }
        }
        return (Array(runs.prefix(count)), threads.withLock { $0 })
    }

    @Test func everyIndexRunsOnceAtAnySize() {
        for count in [0, 1, 2, TwoHalves.minimumItems - 1, TwoHalves.minimumItems, TwoHalves.minimumItems + 1, 1000, 1001] {
            let (runs, _) = run(count)
            #expect(runs.allSatisfy { $0 == 1 }, "count \(count)")
            #expect(runs.count == count)
        }
    }

    @Test func belowTheMinimumTheCallerRunsItAll() {
        let (runs, threads) = run(TwoHalves.minimumItems - 1)
        #expect(runs.allSatisfy { $0 == 1 })
        #expect(threads.count == 1)
    }

    /// Many callers at once: one may have the helper, the others run both halves themselves;
    /// none waits for another's half, and every index of every call runs once.
    @Test func callersAtOnceAllFinish() {
        let failures = Protected(0)
        let done = Protected(0)
        let callers = 8
        for _ in 0..<callers {
            startDetachedThread(name: "halves-test", stackSize: 1 << 20) {
                for round in 0..<200 {
                    let count = 64 + round
                    let runs = UnsafeMutableBufferPointer<Int>.allocate(capacity: count)
                    runs.initialize(repeating: 0)
                    TwoHalves.forEachHalf(count: count) { range in
                        for index in range { runs[index] += 1 }
                    }
                    if !runs.allSatisfy({ $0 == 1 }) { failures.withLock { $0 += 1 } }
                    runs.deallocate()
                }
                done.withLock { $0 += 1 }
            }
        }
        let deadline = monotonicSeconds() + 60
        while done.withLock({ $0 }) < callers && monotonicSeconds() < deadline { usleep(10_000) }
        #expect(done.withLock { $0 } == callers, "a caller is stuck")
        #expect(failures.withLock { $0 } == 0)
    }

    private func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
