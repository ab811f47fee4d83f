import Synchronization

/// A value guarded by a lock, for state that many threads touch: a class around
/// `Synchronization.Mutex`, so that it can be shared by reference and stored in other classes.
package final class Protected<Value>: Sendable {
    private let mutex: Mutex<Value>

    package init(_ value: sending Value) {
        mutex = Mutex(value)
    }

    package func withLock<Result, Failure: Error>(_ body: (inout sending Value) throws(Failure) -> sending Result) throws(Failure) -> sending Result {
        try mutex.withLock(body)
    }

    /// Reads without an `inout` access: reading a closure through `withLock { $0 }` writes it
    /// back wrapped in fresh reabstraction thunks, so a handler read per event grows without end
    /// (it overflowed a worker's stack after ~13,000 events).
    package func read<Result>(_ body: (borrowing Value) -> sending Result) -> sending Result {
        mutex.withLock { (value: inout sending Value) -> sending Result in body(value) }
    }
}
