import Foundation
import KeywellSystem

/// Runs `body(index)` for `count` clients at once, each on a thread of its own, and returns when
/// all are done. Not `DispatchQueue.concurrentPerform`: that runs as many at a time as there are
/// cores (two here), so "8 clients" would be two clients taking turns (docs/performance.md).
enum ClientThreads {
    static func run(count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            // pthread's default stack, as Foundation's Thread gave these clients before.
            startDetachedThread(name: "bench-client-\(index)", stackSize: 8 << 20) {
                body(index)
                group.leave()
            }
        }
        group.wait()
    }
}
