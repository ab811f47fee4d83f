import Foundation

/// What the daemon acknowledged: for each item a client wrote, the secret it must now hold, or
/// nil when an acknowledged delete removed it. Only acknowledged calls change the ledger, so
/// the final check asks exactly what the daemon promised.
// @unchecked: its tables are only touched under `lock`.
final class AcknowledgedLedger: @unchecked Sendable {
    enum Face: Hashable { case native, secretService }
    struct Key: Hashable {
        var face: Face
        var name: String
    }

    private let lock = NSLock()
    private var expected: [Key: [UInt8]?] = [:]
    private var failures: [String] = []
    private(set) var errorCount = 0

    func acknowledge(_ key: Key, secret: [UInt8]?) { lock.withLock { expected[key] = .some(secret) } }

    /// A write whose outcome is unknown (its call failed): neither present nor absent is wrong.
    func forget(_ key: Key) { _ = lock.withLock { expected.removeValue(forKey: key) } }

    func expectation(_ key: Key) -> [UInt8]?? { lock.withLock { expected[key] } }

    var entries: [(Key, [UInt8]?)] { lock.withLock { expected.map { ($0.key, $0.value) } } }

    /// Counts an error and keeps the first few texts for the report.
    func error(_ text: String) {
        lock.withLock {
            errorCount += 1
            if failures.count < 5 { failures.append(text) }
        }
    }

    var firstErrors: [String] { lock.withLock { failures } }
}
