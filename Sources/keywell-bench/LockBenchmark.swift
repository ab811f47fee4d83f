import ArgumentParser
import Foundation
import KeywellSystem
import Synchronization

/// `keywell-bench locks`: `Protected` (over `pthread_mutex_t`, which ThreadSanitizer sees) against
/// `Synchronization.Mutex` (which it replaced): one thread taking the lock over and over, and
/// several threads fighting for it. Fails when a `Protected` pair takes more than its budget in
/// either row; the ratio to `Mutex` is printed beside it (docs/performance.md, "Locks").
struct LockBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "locks",
        abstract: "Protected (pthread mutex) against Synchronization.Mutex: uncontended and contended lock/unlock."
    )

    @Option(help: "Lock/unlock pairs per thread in each run.")
    var iterations = 2_000_000

    @Option(help: "Threads in the contended row.")
    var threads = 4

    @Option(help: "Runs of each row; the best counts (the least disturbed by other load).")
    var runs = 5

    @Option(help: "Nanoseconds an uncontended Protected lock/unlock pair may take.")
    var uncontendedBudget = 60.0

    @Option(help: "Nanoseconds a contended Protected lock/unlock pair may take (all threads together).")
    var contendedBudget = 150.0

    func run() throws {
        guard iterations > 0, threads > 1, runs > 0 else { throw ValidationError("--iterations, --threads (>1) and --runs must be positive") }
        print("Locks: \(iterations) lock/unlock pairs per thread, best of \(runs) runs, "
              + "\(ProcessInfo.processInfo.activeProcessorCount) cores")
        var missed = false
        for count in [1, threads] {
            let mutex = best { Self.time(threads: count, iterations: iterations, MutexBox()) }
            let protected = best { Self.time(threads: count, iterations: iterations, ProtectedBox()) }
            let ratio = protected / mutex
            let budget = count == 1 ? uncontendedBudget : contendedBudget
            let ok = protected <= budget
            missed = missed || !ok
            let target = String(format: "Protected <= %.0f ns", budget)
            print(String(format: "%@: Mutex %.1f ns, Protected %.1f ns per pair, %.2fx (target %@) %@",
                         count == 1 ? "one thread" : "\(count) threads, one lock", mutex, protected, ratio, target, ok ? "ok" : "MISSED"))
        }
        if missed { throw ExitCode(1) }
    }

    private func best(_ measure: () -> Double) -> Double {
        (0..<runs).map { _ in measure() }.min()!
    }

    /// Nanoseconds per lock/unlock pair, all threads together.
    private static func time(threads: Int, iterations: Int, _ lock: some CountingLock) -> Double {
        let start = ContinuousClock.now
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<iterations { lock.increment() }
        }
        let elapsed = ContinuousClock.now - start
        precondition(lock.count == threads * iterations, "lost increments")
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return seconds * 1e9 / Double(threads * iterations)
    }
}

private protocol CountingLock: Sendable {
    func increment()
    var count: Int { get }
}

private final class MutexBox: CountingLock {
    private let value = Mutex(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

private final class ProtectedBox: CountingLock {
    private let value = Protected(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}
