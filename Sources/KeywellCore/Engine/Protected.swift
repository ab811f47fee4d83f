import Foundation

/// A value guarded by a lock, for state that many threads touch.
final class Protected<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// Reads without an `inout` access: reading a closure through `withLock { $0 }` writes it
    /// back wrapped in fresh reabstraction thunks, so a handler read per event grows without end
    /// (it overflowed a worker's stack after ~13,000 events).
    func read<Result>(_ body: (Value) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(value)
    }
}
