import Foundation

/// Runs `body(index)` for `count` clients at once, each on a thread of its own, and returns when
/// all are done. Not `DispatchQueue.concurrentPerform`: that runs as many at a time as there are
/// cores (two here), so "8 clients" would be two clients taking turns (docs/performance.md).
enum ClientThreads {
    static func run(count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            let thread = Thread {
                body(index)
                group.leave()
            }
            thread.name = "bench-client-\(index)"
            thread.start()
        }
        group.wait()
    }
}
