import Foundation
import KeywellSystem
import Testing

@testable import KeywellSecretService

/// Item signals that wait for a reply go out oldest first, one at a time, whoever sends them.
@Suite struct ItemSignalQueueTests {
    @Test func sendsInTheOrderEnqueuedAndOnlyOnce() {
        let queue = ItemSignalQueue()
        let sent = Protected<[Int]>([])
        for number in 0..<3 { queue.enqueue { sent.withLock { $0.append(number) } } }
        #expect(sent.withLock { $0 }.isEmpty)
        queue.flush()
        queue.flush()
        #expect(sent.withLock { $0 } == [0, 1, 2])
    }

    /// A send that causes another change (and flushes) neither deadlocks nor lets the new one
    /// overtake what was already waiting.
    @Test func aFlushFromInsideASendLeavesTheOrder() {
        let queue = ItemSignalQueue()
        let sent = Protected<[String]>([])
        queue.enqueue {
            sent.withLock { $0.append("first") }
            queue.enqueue { sent.withLock { $0.append("caused by first") } }
            queue.flush()
        }
        queue.enqueue { sent.withLock { $0.append("second") } }
        queue.flush()
        #expect(sent.withLock { $0 } == ["first", "second", "caused by first"])
    }

    /// Threads enqueueing and flushing at once: every signal goes out once, never two at the
    /// same time, and each thread's in its own order.
    @Test func threadsNeverSendAtOnceNorOutOfOrder() {
        let queue = ItemSignalQueue()
        let threads = 4, perThread = 500
        let sent = Protected<[[Int]]>(Array(repeating: [], count: threads))
        let sending = Protected(0)
        let overlapped = Protected(false)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for number in 0..<perThread {
                queue.enqueue {
                    if sending.withLock({ count -> Int in count += 1; return count }) > 1 { overlapped.withLock { $0 = true } }
                    sent.withLock { $0[thread].append(number) }
                    sending.withLock { $0 -= 1 }
                }
                queue.flush()
            }
        }
        queue.flush()
        #expect(!overlapped.withLock { $0 })
        #expect(sent.withLock { $0 } == Array(repeating: Array(0..<perThread), count: threads))
    }
}
