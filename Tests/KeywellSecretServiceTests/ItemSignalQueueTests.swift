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

    /// The race `SecretServiceSignals.inOrder` closes: while one thread sends a call's item
    /// signals, another thread's change (a collection's new label) is queued, not sent at once
    /// after a flush that returned early, so it cannot overtake the signals not yet sent.
    @Test func aChangeToldWhileAnotherThreadSendsGoesAfterWhatWaits() {
        let queue = ItemSignalQueue()
        let sent = Protected<[String]>([])
        let inFirstSend = DispatchSemaphore(value: 0)
        let mayFinish = DispatchSemaphore(value: 0)
        queue.enqueue {
            inFirstSend.signal()
            mayFinish.wait()
            sent.withLock { $0.append("item changed") }
        }
        queue.enqueue { sent.withLock { $0.append("item properties") } }
        let drainer = Thread { queue.flush() }
        drainer.start()
        inFirstSend.wait()
        // The other thread's change, told while the first thread is inside its send.
        queue.enqueue { sent.withLock { $0.append("collection label") } }
        queue.flush()
        #expect(sent.withLock { $0 }.isEmpty, "the flush returns at once; the draining thread sends")
        mayFinish.signal()
        queue.flush()
        #expect(eventuallyTrue { sent.withLock { $0 }.count == 3 })
        #expect(sent.withLock { $0 } == ["item changed", "item properties", "collection label"])
    }

    private func eventuallyTrue(_ condition: () -> Bool) -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}
