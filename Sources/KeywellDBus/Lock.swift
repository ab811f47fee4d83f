#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain pthread mutex with a condition variable. Used instead of `Synchronization.Mutex`
/// because waiters here need timed waits, and libdbus callbacks need a lock they can take
/// from any thread without touching Swift concurrency.
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
    var saturatingNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return UInt64.max / 2 }
        return whole + UInt64(attoseconds / 1_000_000_000)
    }
}

func deadline(after timeout: Duration) -> UInt64 {
    let now = monotonicNanoseconds()
    let (sum, overflow) = now.addingReportingOverflow(timeout.saturatingNanoseconds)
    return overflow ? UInt64.max / 2 : min(sum, UInt64.max / 2)
}

/// Starts a detached thread running `body` (Foundation's `Thread` without Foundation, so the
/// client side of the library needs only FoundationEssentials).
func startDetachedThread(name: String, stackSize: Int, _ body: @escaping @Sendable () -> Void) {
    final class Start: @unchecked Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) { self.name = name; self.body = body }
    }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    pthread_attr_setstacksize(&attributes, stackSize)
    let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(&thread, &attributes, { argument in
        let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
        // Linux caps a thread's name at 15 bytes.
        ThreadNaming.setName?(pthread_self(), String(start.name.utf8.prefix(15))!)
        start.body()
        return nil
    }, start)
    precondition(status == 0, "pthread_create failed: \(status)")
}

/// glibc's `pthread_setname_np`, which Swift's Glibc module does not export; looked up once.
private enum ThreadNaming {
    typealias Function = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32
    static let setName: Function? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pthread_setname_np") else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }()
}
