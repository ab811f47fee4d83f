import KeywellSystem

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The connection loop's doorbell: any thread rings it (`wake`), the loop polls `readDescriptor`
/// and empties it (`drain`) before it looks at the connection again. Rings while one is pending
/// collapse into one pipe write (a busy daemon would otherwise write once per reply).
///
/// The rule that keeps a ring from being lost (docs/dbus-layer.md, "Threads and the connection
/// loop"): `drain` reads the pipe empty first and only then clears `pending`. Clearing first let
/// a ring land between the two: its byte was read away while `pending` stayed set, so no later
/// ring ever wrote again and the loop slept in poll with replies queued.
// @unchecked: `pending` is guarded by `lock`; the descriptors never change.
final class WakePipe: @unchecked Sendable {
    let readDescriptor: Int32
    private let writeDescriptor: Int32
    private let lock = ConditionLock()
    /// True from a ring's write until the loop has drained it; no other ring writes meanwhile.
    private var pending = false

    init() throws(DBusError) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw .failed("pipe() failed: errno \(errno)") }
        for pipeEnd in fds {
            _ = fcntl(pipeEnd, F_SETFL, fcntl(pipeEnd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(pipeEnd, F_SETFD, FD_CLOEXEC)
        }
        readDescriptor = fds[0]
        writeDescriptor = fds[1]
    }

    deinit {
        close(readDescriptor)
        close(writeDescriptor)
    }

    /// Makes `readDescriptor` readable unless a ring is already pending. Safe from any thread,
    /// including inside libdbus callbacks (it takes only this leaf lock).
    func wake() {
        lock.lock()
        let shouldWrite = !pending
        pending = true
        lock.unlock()
        if shouldWrite {
            var byte: UInt8 = 1
            _ = write(writeDescriptor, &byte, 1)
        }
    }

    /// On the loop, after poll said the pipe is readable and before it looks at its work. A ring
    /// between the read and the clear writes nothing, and needs not: the loop looks at its work
    /// after this returns. A ring after the clear writes a new byte.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readDescriptor, &buffer, buffer.count) > 0 {}
        lock.withLock { pending = false }
    }
}
