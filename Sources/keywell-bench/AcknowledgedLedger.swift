import Foundation
import KeywellSystem

/// What the daemon acknowledged: for each item a client wrote, the secret it must now hold, or
/// nil when an acknowledged delete removed it. Only acknowledged calls change the ledger, so
/// the final check asks exactly what the daemon promised.
final class AcknowledgedLedger: Sendable {
    enum Face: Hashable { case native, secretService }
    struct Key: Hashable {
        var face: Face
        var name: String
    }

    private struct Tables {
        var expected: [Key: [UInt8]?] = [:]
        var failures: [String] = []
        var errorCount = 0
    }

    private let tables = Protected(Tables())

    var errorCount: Int { tables.withLock { $0.errorCount } }

    func acknowledge(_ key: Key, secret: [UInt8]?) { tables.withLock { $0.expected[key] = .some(secret) } }

    /// A write whose outcome is unknown (its call failed): neither present nor absent is wrong.
    func forget(_ key: Key) { _ = tables.withLock { $0.expected.removeValue(forKey: key) } }

    func expectation(_ key: Key) -> [UInt8]?? { tables.withLock { $0.expected[key] } }

    var entries: [(Key, [UInt8]?)] { tables.withLock { $0.expected.map { ($0.key, $0.value) } } }

    /// Counts an error and keeps the first few texts for the report.
    func error(_ text: String) {
        tables.withLock {
            $0.errorCount += 1
            if $0.failures.count < 5 { $0.failures.append(text) }
        }
    }

    var firstErrors: [String] { tables.withLock { $0.failures } }
}
