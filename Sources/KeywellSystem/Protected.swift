#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a lock, for state that many threads touch; a class, so that it can be
/// shared by reference and stored in other classes. Keywell's one lock for state (the direct
/// `Synchronization.Mutex` is not used: scripts/lint.sh checks).
///
/// The lock is a plain `pthread_mutex_t`, not `Synchronization.Mutex`: ThreadSanitizer
/// intercepts pthread's lock and unlock and so sees each hand-over from one holder to the next,
/// whereas `Mutex` on Linux hands a contended lock over inside the kernel (PI futex system calls
/// from the uninstrumented standard library), which TSan cannot see, so it reported two
/// accesses made under the same lock as a race (docs/contributing.md, "Sanitizers"). Uncontended,
/// both are one atomic operation each way; keywell-bench's `core` rows compare them.
///
/// The API is `Mutex`'s: the value is reached only inside `withLock`, as `inout sending`, and
/// what the closure returns is `sending`, so no reference into the value escapes the lock and
/// the class is `Sendable` whatever `Value` is.
// @unchecked: `value` is only touched with `mutex` held; the mutex pointer never changes.
package final class Protected<Value>: @unchecked Sendable {
    // Inlinable, as `Mutex` is: a generic call into another module, unspecialised, cost three
    // times the lock itself (keywell-bench `locks`).
    @usableFromInline let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Unchecked: the mutex already makes every access exclusive, and the run-time check Swift
    /// makes on a class's `var` (on by default in release builds too) cost more than the lock.
    @usableFromInline @exclusivity(unchecked) var value: Value

    package init(_ value: sending Value) {
        self.value = value
        // Adaptive (glibc): a thread that finds the lock taken spins briefly before it sleeps in
        // the kernel, as `Mutex` does; locks here are held for short stretches.
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inlinable
    package func withLock<Result, Failure: Error>(_ body: (inout sending Value) throws(Failure) -> sending Result) throws(Failure) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Reads without an `inout` access: reading a closure through `withLock { $0 }` writes it
    /// back wrapped in fresh reabstraction thunks, so a handler read per event grows without end
    /// (it overflowed a worker's stack after ~13,000 events).
    @inlinable
    package func read<Result>(_ body: (borrowing Value) -> sending Result) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body(value)
    }
}
