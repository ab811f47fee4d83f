import Foundation

extension NSLock {
    /// Runs `body` holding the lock, keeping `body`'s typed error (NSLock.withLock rethrows untyped).
    func locked<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}
