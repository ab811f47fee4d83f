import Foundation
import GRDB
import GRDBSQLite
import KeywellProtocol
import Synchronization

/// How long SQL may run on one connection to a keychain file before SQLite stops it
/// (docs/file-format.md, "What a keychain file may hold"). A call's SQL is one transaction or
/// one statement; SQL that runs longer than the whole call may (`ServiceLimits.callDeadline`)
/// is not Keywell's own, and would otherwise hold a daemon thread and a core forever: SQLite's
/// progress handler interrupts it (SQLITE_INTERRUPT, reported by `KeychainError.from`).
final class SQLTimeLimit: Sendable {
    let limit: Duration
    private let limitNanoseconds: Int64
    /// CLOCK_MONOTONIC nanoseconds after which the running SQL is stopped; 0 while none is timed.
    private let deadline = Atomic<Int64>(0)

    /// SQLite calls the handler every this many virtual machine steps (a few µs).
    private static let stepsPerCheck: Int32 = 1000

    init(_ limit: Duration = ServiceLimits.callDeadline) {
        self.limit = limit
        limitNanoseconds = limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
    }

    /// Installs the check on `db`. The connection's configuration keeps `self` alive as long as
    /// the connection (it captured it), so the handler's unretained pointer stays valid.
    func install(on db: Database) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_progress_handler(db.sqliteConnection, Self.stepsPerCheck, { context in
            guard let context else { return 0 }
            return Unmanaged<SQLTimeLimit>.fromOpaque(context).takeUnretainedValue().hasPassed ? 1 : 0
        }, context)
    }

    /// Runs `body` with the clock started; SQL it runs past `limit` fails with SQLITE_INTERRUPT.
    /// Nested calls keep the outer deadline.
    func timing<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        let started = deadline.compareExchange(expected: 0, desired: Self.now() + limitNanoseconds, ordering: .relaxed).exchanged
        defer { if started { deadline.store(0, ordering: .relaxed) } }
        return try body()
    }

    private var hasPassed: Bool {
        let due = deadline.load(ordering: .relaxed)
        return due != 0 && Self.now() >= due
    }

    private static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
