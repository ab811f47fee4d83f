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
    /// What the loop polls; a bare number, as `pollfd` takes it.
    var readDescriptor: Int32 { readEnd.rawValue }
    private let readEnd: FileDescriptor
    private let writeEnd: FileDescriptor
    private let lock = ConditionLock()
    /// True from a ring's write until the loop has drained it; no other ring writes meanwhile.
    private var pending = false

    init() throws(DBusError) {
        do {
            (readEnd, writeEnd) = try FileDescriptor.pipe()
        } catch {
            throw .failed("pipe() failed: \(error)")
        }
        // Neither end may ever block the loop or a ringing thread.
        try? readEnd.setNonBlocking()
        try? writeEnd.setNonBlocking()
    }

    deinit {
        try? readEnd.close()
        try? writeEnd.close()
    }

    /// Makes `readDescriptor` readable unless a ring is already pending. Safe from any thread,
    /// including inside libdbus callbacks (it takes only this leaf lock).
    func wake() {
        lock.lock()
        let shouldWrite = !pending
        pending = true
        lock.unlock()
        if shouldWrite {
            // A full pipe (EAGAIN) is already readable, which is all a ring has to achieve.
            var byte: UInt8 = 1
            _ = withUnsafeBytes(of: &byte) { try? writeEnd.write($0) }
        }
    }

    /// On the loop, after poll said the pipe is readable and before it looks at its work. A ring
    /// between the read and the clear writes nothing, and needs not: the loop looks at its work
    /// after this returns. A ring after the clear writes a new byte.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        // Until EAGAIN: the pipe is empty.
        while let count = try? buffer.withUnsafeMutableBytes({ raw throws(Errno) in try readEnd.read(into: raw) }), count > 0 {}
        lock.withLock { pending = false }
    }
}
