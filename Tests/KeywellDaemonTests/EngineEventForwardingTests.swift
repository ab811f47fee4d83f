import Foundation
import KeywellCore
import KeywellTestSupport
import Testing
@testable import KeywellDaemon

/// Tens of thousands of engine events must not deepen the handler (see EngineEventForwarding).
@Suite struct EngineEventForwardingTests {
    @Test func manyEventsOnASmallStack() throws {
        let folder = try TemporaryDirectory(prefix: "kwevents")
        let paths = KeywellPaths(keychainsDirectory: URL(fileURLWithPath: folder.path + "/keychains"),
                                 configDirectory: URL(fileURLWithPath: folder.path + "/config"),
                                 runtimeDirectory: URL(fileURLWithPath: folder.path + "/run"))
        let store = try KeychainStore(paths: paths, kdf: .fastForTests)
        let password = SecretBytes(copying: Array("pw".utf8))
        _ = try store.createKeychain("events", password: password)
        let received = Counter()
        EngineEventForwarding.install(on: store) { _ in received.increment() }

        let done = DispatchSemaphore(value: 0)
        let failure = Counter()
        // 512 KiB: without the workaround 20,000 events overflow it several times over.
        let thread = Thread {
            for _ in 0..<10_000 {
                do {
                    try store.lock("events")
                    try store.unlock("events", password: password)
                } catch {
                    failure.increment()
                }
            }
            done.signal()
        }
        thread.stackSize = 512 << 10
        thread.start()
        done.wait()
        #expect(failure.value == 0)
        #expect(received.value == 20_000)
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
