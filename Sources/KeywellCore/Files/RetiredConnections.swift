import GRDB
import KeywellSystem

/// Closed SQLite connections kept instead of freed, up to `limit`.
///
/// GRDB tags each connection's dispatch queue with a value that libdispatch destroys on its
/// global queue when the queue is freed. The first such job starts libdispatch's worker pool,
/// and with it a monitor that wakes the process every second for the rest of its life: in the
/// daemon, a thread that ran libdispatch's code (and libc's) after every idle trim, so that it
/// stayed resident (docs/performance.md, "The daemon"). A closed connection is a few objects
/// (its SQLite connection, caches and file are gone); past `limit` they are freed as before.
package enum RetiredConnections {
    /// The daemon closes a connection when it opens a keychain (the header check), makes one,
    /// and once for the schemas it accepts (an in-memory database).
    package static let limit = 32

    private static let kept = Protected<[DatabaseQueue]>([])

    /// Closes `queue` and keeps it (while fewer than `limit` are kept).
    package static func close(_ queue: DatabaseQueue) throws {
        try queue.close()
        kept.withLock { kept in
            if kept.count < limit { kept.append(queue) }
        }
    }
}
