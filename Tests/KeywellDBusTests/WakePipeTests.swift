import Foundation
import Testing

@testable import KeywellDBus

#if canImport(Glibc)
import Glibc
#endif

@Suite("Wake pipe")
struct WakePipeTests {
    /// The lost wake-up behind keywelld's lost replies under load (docs/dbus-layer.md): threads
    /// ring as fast as they can while another drains as the connection loop does. Whatever the
    /// interleaving, once they stop a ring must leave the pipe readable; a ring swallowed between
    /// "clear pending" and "read" would leave `pending` set with an empty pipe, and every later
    /// ring silent. With that order a round got stuck about every second or third time here, so
    /// ten rounds catch it nearly always; with the right order no round can.
    @Test func aRingIsNeverLostWhileTheLoopDrains() throws {
        let pipe = try WakePipe()
        for round in 1...10 {
            try ringWhileDraining(pipe, ringers: 3, ringsEach: 100_000)
            // Either a byte is still unread (its ring is pending) or this ring writes one.
            pipe.wake()
            var check = [pollfd(fd: pipe.readDescriptor, events: Int16(POLLIN), revents: 0)]
            try #require(poll(&check, 1, 0) == 1, "round \(round): a ring raced with a drain and left the pipe silent")
            pipe.drain()
        }
    }

    /// Rings from `ringers` threads while one thread drains whenever the pipe is readable; returns
    /// once the drainer has stopped, without draining the pipe for the last time.
    private func ringWhileDraining(_ pipe: WakePipe, ringers: Int, ringsEach: Int) throws {
        // The drainer's own stop signal, so that ending it touches nothing of the wake pipe.
        var stopFDs: [Int32] = [0, 0]
        try #require(Glibc.pipe(&stopFDs) == 0)
        defer { stopFDs.forEach { close($0) } }
        let stopRead = stopFDs[0]
        let drainerEnded = DispatchSemaphore(value: 0)
        Thread {
            var pollSet = [pollfd(fd: pipe.readDescriptor, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)]
            while true {
                pollSet[0].revents = 0
                pollSet[1].revents = 0
                _ = poll(&pollSet, 2, -1)  // a stuck pipe parks us here until the stop signal
                if pollSet[1].revents != 0 { break }
                pipe.drain()
            }
            drainerEnded.signal()
        }.start()
        DispatchQueue.concurrentPerform(iterations: ringers) { _ in
            for _ in 0..<ringsEach { pipe.wake() }
        }
        var byte: UInt8 = 1
        _ = write(stopFDs[1], &byte, 1)
        try #require(drainerEnded.wait(timeout: .now() + 60) == .success, "hang guard: the drainer never ended")
    }
}
