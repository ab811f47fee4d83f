import Foundation
import KeywellCore
import KeywellSystem
import Testing

/// The daemon reads `onEvent` once per event for the life of the process: reading it must not
/// make the handler any deeper (it once grew by two thunks a read and overflowed a worker's
/// stack after ~13,000 item changes).
@Suite struct EventHandlerTests {
    @Test func twentyThousandEventsOnASmallStack() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        let password = SecretBytes(copying: Array("pw".utf8))
        _ = try store.registry.createKeychain("events", password: password)
        let received = EventCount()
        store.onEvent = { _ in received.increment() }

        let done = DispatchSemaphore(value: 0)
        let failures = EventCount()
        // 512 KiB: with a handler that deepened per read, 20,000 events overflow it many times over.
        let thread = Thread {
            for _ in 0..<10_000 {
                do {
                    try store.locking.lock("events")
                    try store.locking.unlock("events", password: password)
                } catch {
                    failures.increment()
                }
            }
            done.signal()
        }
        thread.stackSize = 512 << 10
        thread.start()
        done.wait()
        #expect(failures.value == 0)
        #expect(received.value == 20_000)
    }
}

private final class EventCount: Sendable {
    private let count = Protected(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
