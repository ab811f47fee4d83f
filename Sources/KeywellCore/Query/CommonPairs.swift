import Foundation
import KeywellSystem

/// Attribute pairs that drove a search through many candidates (an `xdg:schema`, an application
/// name), remembered so that later searches try a rarer pair first. Only the order of a search's
/// work depends on it, never its result; the memory is bounded and holds no secrets (attributes
/// are stored in clear and readable while locked).
final class CommonPairs: Sendable {
    static let shared = CommonPairs(capacity: 256)

    private struct Pair: Hashable {
        let name: String
        let value: String
    }

    private let capacity: Int
    private let pairs = Protected(Set<Pair>())

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// For each pair, whether it was seen to be common.
    func contains(_ query: [(name: String, value: String)]) -> [Bool] {
        pairs.read { known in
            known.isEmpty ? Array(repeating: false, count: query.count) : query.map { known.contains(Pair(name: $0.name, value: $0.value)) }
        }
    }

    func insert(name: String, value: String) {
        pairs.withLock { known in
            // Full: forget one at random; a pair still common comes back at its next search.
            if known.count >= capacity, let any = known.first { known.remove(any) }
            known.insert(Pair(name: name, value: value))
        }
    }
}
