import Foundation
import GRDB
import KeywellProtocol

/// Measures the floor under a durable add: one plain SQLite insert per transaction, in a file set
/// up like a keychain (WAL, `synchronous=FULL`). For benchmarks and diagnosing slow disks.
public enum StorageProbe {
    /// The latency of each of `count` single-row commits of `rowBytes` bytes, in a scratch file
    /// in `directory` that is removed afterwards.
    public static func durableInsertLatencies(
        in directory: URL, rowBytes: Int, count: Int
    ) throws(KeychainError) -> [Duration] {
        let path = directory.appendingPathComponent("storage-probe-\(getpid()).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
        }
        return try KeychainError.rethrowing(path: path) {
            var configuration = Configuration()
            configuration.journalMode = .wal
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                try db.execute(sql: "CREATE TABLE probe (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)")
            }
            let payload = Sodium.randomData(count: rowBytes)
            let clock = ContinuousClock()
            var latencies: [Duration] = []
            latencies.reserveCapacity(count)
            for _ in 0..<count {
                let start = clock.now
                try queue.writeWithoutTransaction { db in
                    try db.inTransaction(.immediate) {
                        try db.cachedStatement(sql: "INSERT INTO probe (payload) VALUES (?)").execute(arguments: [payload])
                        return .commit
                    }
                }
                latencies.append(clock.now - start)
            }
            try queue.close()
            return latencies
        }
    }
}
