import CDBus
import KeywellSystem

/// libdbus's two watches on a connection's socket (reading and writing), which the loop hands
/// what `poll` found ready (`dbus_watch_handle`). `dbus_connection_read_write` polls the socket
/// once more before it reads, one system call per turn of the loop that the loop's own poll has
/// already answered.
///
/// A watch's lifetime (docs/dbus-layer.md, "Reading through the watches"): libdbus frees a watch
/// right after our remove function returns, on whichever thread disconnected the connection, and
/// `dbus_watch_handle` reads the watch before it takes the connection's lock. So the loop may
/// hand a watch to libdbus only while no other thread can disconnect: apart from the loop, only a
/// sender does I/O on a running connection (closing waits for the loop to end first), so senders
/// pass a gate. While the loop handles a watch, a sender waits before entering libdbus; while a
/// sender is inside libdbus, the loop reads through `dbus_connection_read_write` as before (it
/// never waits). Neither waits holding a libdbus lock: a sender waits before libdbus, and the
/// loop holds `lock` only around its own fields, never across a call into libdbus.
// @unchecked: every field is guarded by `lock`.
final class ConnectionWatches: @unchecked Sendable {
    private let lock = ConditionLock()
    private var readWatch: OpaquePointer?
    private var writeWatch: OpaquePointer?
    /// True while the loop is inside `dbus_watch_handle`.
    private var loopHandling = false
    /// Senders inside libdbus now, and senders waiting for the loop to leave libdbus.
    private var senders = 0
    private var waitingSenders = 0

    /// Which watch: libdbus gives a socket connection one of each.
    enum Direction { case reading, writing }

    /// Learns the connection's watches and follows their coming and going. Before the loop
    /// starts; false when libdbus had no memory (the loop then reads as before).
    func install(on connection: OpaquePointer) -> Bool {
        let data = Unmanaged.passRetained(self).toOpaque()
        // libdbus calls these with the connection's lock held, from any thread: they touch
        // nothing but `lock`'s fields.
        let installed = dbus_connection_set_watch_functions(connection, { watch, data in
            guard let watch, let data else { return 1 }
            Unmanaged<ConnectionWatches>.fromOpaque(data).takeUnretainedValue().added(watch)
            return 1
        }, { watch, data in
            guard let watch, let data else { return }
            Unmanaged<ConnectionWatches>.fromOpaque(data).takeUnretainedValue().removed(watch)
        }, nil, data, { data in
            guard let data else { return }
            Unmanaged<ConnectionWatches>.fromOpaque(data).release()
        })
        if installed == 0 {
            Unmanaged<ConnectionWatches>.fromOpaque(data).release()
            return false
        }
        return true
    }

    private func added(_ watch: OpaquePointer) {
        let flags = dbus_watch_get_flags(watch)
        lock.withLock {
            if flags & DBUS_WATCH_READABLE.rawValue != 0 { readWatch = watch }
            if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { writeWatch = watch }
        }
    }

    private func removed(_ watch: OpaquePointer) {
        lock.withLock {
            if readWatch == watch { readWatch = nil }
            if writeWatch == watch { writeWatch = nil }
        }
    }

    /// On the loop: hands `flags` (`DBusWatchFlags`) to the watch of `direction`. False when it
    /// did not: no such watch (the connection is gone) or a sender is inside libdbus; the caller
    /// then reads and writes through `dbus_connection_read_write`.
    func handle(_ direction: Direction, flags: UInt32) -> Bool {
        lock.lock()
        // A waiting sender goes first: a loop that turns fast (a big message read in pieces)
        // would otherwise take the gate again before the woken sender runs, turn after turn.
        guard senders == 0, waitingSenders == 0, let watch = direction == .reading ? readWatch : writeWatch else {
            lock.unlock()
            return false
        }
        loopHandling = true
        lock.unlock()
        // Returns false only when libdbus ran out of memory: the next turn tries again.
        _ = dbus_watch_handle(watch, flags)
        lock.lock()
        loopHandling = false
        if waitingSenders > 0 { lock.broadcast() }
        lock.unlock()
        return true
    }

    /// Runs `body`, a send on a thread that is not the loop's, once the loop is not handling a
    /// watch; the loop does not hand a watch to libdbus while it runs.
    func sending<T>(_ body: () -> T) -> T {
        lock.lock()
        while loopHandling {
            waitingSenders += 1
            lock.wait(untilNanoseconds: nil)
            waitingSenders -= 1
        }
        senders += 1
        lock.unlock()
        defer { lock.withLock { senders -= 1 } }
        return body()
    }
}
