#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain pthread mutex with a condition variable. Used instead of `Synchronization.Mutex`
/// where waiters need timed waits (Mutex has no condition), and where libdbus callbacks need a
/// lock they can take from any thread without touching Swift concurrency.
// @unchecked: the pthread mutex and condition are made for sharing between threads; the pointers never change.
package final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    package init() {
        pthread_mutex_init(mutex, nil)
        // CLOCK_MONOTONIC so that timed waits are not disturbed by wall-clock changes.
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }
    package func unlock() { pthread_mutex_unlock(mutex) }

    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits (the lock held) until signalled or `deadline` (monotonic nanoseconds) passes.
    /// Returns false on timeout.
    @discardableResult
    package func wait(untilNanoseconds deadline: UInt64?) -> Bool {
        guard let deadline else {
            pthread_cond_wait(condition, mutex)
            return true
        }
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &time) == 0
    }

    package func signal() { pthread_cond_signal(condition) }
    package func broadcast() { pthread_cond_broadcast(condition) }
}

/// Monotonic clock in nanoseconds (the clock the condition waits use).
package func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

extension Duration {
    /// Whole nanoseconds, saturating; negative durations count as zero.
    package var saturatingNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return UInt64.max / 2 }
        return whole + UInt64(attoseconds / 1_000_000_000)
    }
}

package func deadline(after timeout: Duration) -> UInt64 {
    let now = monotonicNanoseconds()
    let (sum, overflow) = now.addingReportingOverflow(timeout.saturatingNanoseconds)
    return overflow ? UInt64.max / 2 : min(sum, UInt64.max / 2)
}
