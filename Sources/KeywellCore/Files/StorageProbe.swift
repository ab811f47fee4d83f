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
        let probe = try DurableCommitProbe(in: directory, rowBytes: rowBytes)
        var latencies: [Duration] = []
        latencies.reserveCapacity(count)
        for _ in 0..<count { latencies.append(try probe.commit()) }
        return latencies
    }
}

/// One durable commit at a time, on demand, so a benchmark can measure the floor again right
/// before the writes it holds to it (a disk that slowed down since start-up then weighs on both
/// alike). Its scratch file in `directory` goes with it.
public final class DurableCommitProbe {
    private let path: String
    private let queue: DatabaseQueue
    private let payload: Data
    private let clock = ContinuousClock()

    public init(in directory: URL, rowBytes: Int) throws(KeychainError) {
        let path = directory.appendingPathComponent("storage-probe-\(getpid())-\(UUID().uuidString).sqlite").path
        self.path = path
        payload = Sodium.randomData(count: rowBytes)
        do {
            var configuration = Configuration()
            configuration.journalMode = .wal
            queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                try db.execute(sql: "CREATE TABLE probe (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)")
            }
        } catch {
            Self.remove(path)
            throw KeychainError.from(error, path: path)
        }
    }

    deinit {
        try? queue.close()
        Self.remove(path)
    }

    /// Inserts one row in its own IMMEDIATE transaction; returns how long it took.
    public func commit() throws(KeychainError) -> Duration {
        let start = clock.now
        try KeychainError.rethrowing(path: path) {
            try queue.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    try db.cachedStatement(sql: "INSERT INTO probe (payload) VALUES (?)").execute(arguments: [payload])
                    return .commit
                }
            }
        }
        return clock.now - start
    }

    private static func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
    }
}
