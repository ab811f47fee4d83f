import CDBus
import KeywellSystem

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The loop that does a connection's I/O and dispatching, on one thread at a time.
///
/// It polls the connection's socket and a wake-up pipe, hands what the poll found ready to
/// libdbus's watches (`ConnectionWatches`; `dbus_connection_read_write(…, 0)` while a sender is
/// inside libdbus or the client is still authenticating), and dispatches every queued message.
/// Other threads never do I/O through libdbus except sending (through `sending`): libdbus writes a sent message at once
/// from the sending thread when it can, and otherwise calls our wake-up function so the loop
/// writes it (the classic stall of `read_write_dispatch(-1)` plus sends from other threads
/// cannot happen: nobody ever blocks inside libdbus here). The poll has no timeout: an idle
/// connection costs nothing and a wake-up costs one pipe write (`WakePipe`; the rules that keep
/// every queued message moving are in docs/dbus-layer.md).
///
/// Leader and followers: the loop runs as a job of the connection's worker pool. A method call
/// that must not run on the loop (a write that waits for the disk, a prompt) does not wait for a
/// worker to wake up: the thread that read it hands the loop to an idle worker and runs the call
/// itself, while its data is still in this CPU's caches. On these machines waking a sleeping
/// thread costs tens of microseconds, paid in parallel this way instead of before the call.
/// Method calls are taken out of libdbus's queue (borrowed, then stolen) so that no libdbus
/// lock is held while they run; everything else (signals, replies to our own calls, `Peer`,
/// the local `Disconnected`) goes through `dbus_connection_dispatch` as before.
// @unchecked: its flags are guarded by `lock`; the libdbus connection is used only on the loop thread or under libdbus's own locks.
final class ConnectionLoop: @unchecked Sendable {
    private let connection: OpaquePointer
    private let socket: Int32
    private let wakePipe: WakePipe
    private let watches = ConnectionWatches()
    /// False when libdbus could not take our watch functions: the loop reads as before.
    private var watchesInstalled = false
    private let lock = ConditionLock()
    private var stopRequested = false
    private var finished = false
    private var started = false
    private let onFinish: @Sendable () -> Void
    private let workers: WorkerPool
    /// Where method calls go (set by `start`, read only by the leader).
    private var methodCallHandler: (@Sendable (OpaquePointer) -> Void)?

    /// The connection must be open and authenticated; `onFinish` runs on the loop's last leader
    /// when it ends. The loop's leaders are threads of `workers`.
    init(connection: OpaquePointer, workers: WorkerPool, onFinish: @escaping @Sendable () -> Void) throws(DBusError) {
        self.connection = connection
        self.workers = workers
        self.onFinish = onFinish
        var fd: Int32 = -1
        guard dbus_connection_get_socket(connection, &fd) != 0, fd >= 0 else {
            throw .notSupported("This connection has no socket to poll")
        }
        socket = fd
        wakePipe = try WakePipe()
    }

    /// Starts the loop; every incoming method call except `org.freedesktop.DBus.Peer`'s (which
    /// libdbus answers) goes to `methodCalls`, on the loop's current leader.
    func start(methodCalls: @escaping @Sendable (OpaquePointer) -> Void) {
        methodCallHandler = methodCalls
        watchesInstalled = watches.install(on: connection)
        let userData = Unmanaged.passRetained(self).toOpaque()
        // libdbus calls these from whatever thread queued work; they only poke the pipe.
        dbus_connection_set_wakeup_main_function(connection, { data in
            // The loop itself looks at the connection again before it polls.
            if LoopThread.isRunning(data) { return }
            if SendScope.deferWakeIfSending() { return }  // the sender decides afterwards
            Unmanaged<ConnectionLoop>.fromOpaque(data!).takeUnretainedValue().wake()
        }, userData, { data in
            Unmanaged<ConnectionLoop>.fromOpaque(data!).release()
        })
        dbus_connection_set_dispatch_status_function(connection, { _, status, data in
            if status == DBUS_DISPATCH_DATA_REMAINS, !LoopThread.isRunning(data), !SendScope.deferWakeIfSending() {
                Unmanaged<ConnectionLoop>.fromOpaque(data!).takeUnretainedValue().wake()
            }
        }, Unmanaged.passUnretained(self).toOpaque(), nil)

        lock.withLock { started = true }
        if !workers.submitToRunNow({ [self] in lead() }) {
            finish()  // a stopped pool: the connection is being closed
        }
    }

    /// True on the loop's current leader (the thread where `.ioThread` handlers run).
    var isOnLoopThread: Bool { LoopThread.isRunning(identity) }

    private var identity: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Runs `body` off the loop. Called on the leader, the loop goes on on an idle worker and this
    /// thread runs `body` at once; elsewhere, or when no worker can start now, `body` is queued
    /// for a worker (the loop never waits behind busy workers: their nested calls may need it).
    func runOffLoop(_ body: @escaping @Sendable () -> Void) {
        guard isOnLoopThread, workers.submitToRunNow({ [self] in lead() }) else {
            workers.submit(body)
            return
        }
        LoopThread.leave()
        body()
    }

    var isFinished: Bool { lock.withLock { finished } }

    /// Runs `body`, a libdbus send on this connection, so that it never races the loop's use of
    /// a watch (`ConnectionWatches`). The loop's own thread needs no gate.
    func sending<T>(_ body: () -> T) -> T {
        if isOnLoopThread { return body() }
        return watches.sending(body)
    }

    /// Whether sent messages are still queued, not yet (all) written to the socket.
    var isStillSending: Bool { dbus_connection_has_messages_to_send(connection) != 0 }

    /// Makes the loop look at the connection again. Safe from any thread, including from inside
    /// libdbus callbacks. Repeated wakes collapse into one.
    func wake() { wakePipe.wake() }

    /// After a send that asked for a wake-up: wake the loop only if it has work (the message
    /// was not completely written, or messages arrived meanwhile).
    func wakeIfNeededAfterSend() {
        if dbus_connection_has_messages_to_send(connection) != 0
            || dbus_connection_get_dispatch_status(connection) == DBUS_DISPATCH_DATA_REMAINS {
            wake()
        }
    }

    /// Asks the loop to end and waits for it (unless called from the loop itself).
    func stop() {
        let started = lock.withLock { () -> Bool in
            stopRequested = true
            return self.started
        }
        wake()
        if !started || isOnLoopThread { return }
        waitUntilFinished()
    }

    /// Blocks until the loop has ended (stop() or disconnection).
    func waitUntilFinished() {
        lock.withLock {
            while !finished { lock.wait(untilNanoseconds: nil) }
        }
    }

    /// The loop, on its current leader, until it ends or hands itself to another thread.
    private func lead() {
        LoopThread.enter(identity)
        var pollSet = [
            pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakePipe.readDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        // A connection a server accepted starts by authenticating its client (a bus connection
        // is authenticated before its loop starts).
        var authenticated = dbus_connection_get_is_authenticated(connection) != 0
        while true {
            dispatchQueuedMessages()
            // A call handed the loop to another thread while it ran here: that thread goes on.
            guard isOnLoopThread else { return }
            if lock.withLock({ stopRequested }) { break }
            if dbus_connection_get_is_connected(connection) == 0 {
                dispatchQueuedMessages()  // delivers the local Disconnected signal
                guard isOnLoopThread else { return }
                break
            }
            let wantsWrite = dbus_connection_has_messages_to_send(connection) != 0
            pollSet[0].events = Int16(POLLIN) | (wantsWrite ? Int16(POLLOUT) : 0)
            pollSet[0].revents = 0
            pollSet[1].revents = 0
            let ready = retryingOnInterrupt { poll(&pollSet, 2, -1) }
            if ready < 0 {
                break
            }
            if pollSet[1].revents != 0 { wakePipe.drain() }
            if authenticated, watchesInstalled {
                if pollSet[0].revents != 0 { handleReady(pollSet[0].revents) }
            } else if pollSet[0].revents != 0 || wantsWrite {
                // Never blocks: reads what is there, writes what fits.
                dbus_connection_read_write(connection, 0)
                if !authenticated {
                    // libdbus answers a line of the handshake in the round after the one that read
                    // it, and the answer is no message (nothing above asks for POLLOUT): write it now.
                    dbus_connection_read_write(connection, 0)
                    authenticated = dbus_connection_get_is_authenticated(connection) != 0
                }
            }
        }
        LoopThread.leave()
        finish()
    }

    /// Reads and writes what the poll found ready, through the watches; when one cannot be
    /// handled now, `dbus_connection_read_write` does both (it never blocks).
    private func handleReady(_ revents: Int16) {
        var readFlags: UInt32 = 0
        if revents & Int16(POLLIN) != 0 { readFlags |= DBUS_WATCH_READABLE.rawValue }
        if revents & Int16(POLLHUP) != 0 { readFlags |= DBUS_WATCH_HANGUP.rawValue }
        if revents & Int16(POLLERR) != 0 { readFlags |= DBUS_WATCH_ERROR.rawValue }
        if readFlags != 0, !watches.handle(.reading, flags: readFlags) {
            dbus_connection_read_write(connection, 0)
            return
        }
        // Looked up again: reading may have ended the connection and freed both watches.
        if revents & Int16(POLLOUT) != 0, !watches.handle(.writing, flags: DBUS_WATCH_WRITABLE.rawValue) {
            dbus_connection_read_write(connection, 0)
        }
    }

    private func finish() {
        // Counted as the loop's thread until it has finished: should `onFinish` (or anything it
        // releases) drop the connection's last reference, closing it must not wait for this very
        // loop to finish (a thread blocked on itself for good, with the connection's descriptors).
        let previous = LoopThread.current
        LoopThread.enter(identity)
        defer { LoopThread.restore(previous) }
        dbus_connection_set_dispatch_status_function(connection, nil, nil, nil)
        methodCallHandler = nil  // it holds the router, which holds this loop
        onFinish()
        lock.withLock {
            finished = true
            lock.broadcast()
        }
    }

    /// Dispatches until the queue is empty or a handler took the loop's lead elsewhere.
    private func dispatchQueuedMessages() {
        var dispatched = false
        // Once the round's replies are sent: what the handlers left on this stack goes. A thread
        // that handed the loop on leaves at once for its pool, which scrubs after every job.
        defer { if dispatched, isOnLoopThread { keywell_scrub_stack() } }
        while isOnLoopThread {
            switch dbus_connection_get_dispatch_status(connection) {
            case DBUS_DISPATCH_DATA_REMAINS:
                dispatched = true
                dispatchNext()
            case DBUS_DISPATCH_NEED_MEMORY:
                usleep(1000)
                return
            default:
                return
            }
        }
    }

    /// A method call leaves libdbus's queue and goes to the handler with no libdbus lock held
    /// (borrowing holds the dispatch lock until the message is stolen); the rest is dispatched.
    private func dispatchNext() {
        guard let message = dbus_connection_borrow_message(connection) else {
            dbus_connection_dispatch(connection)
            return
        }
        guard let handler = methodCallHandler, dbus_message_get_type(message) == MessageType.methodCall,
              dbus_message_has_interface(message, Self.peerInterface) == 0 else {
            dbus_connection_return_message(connection, message)
            dbus_connection_dispatch(connection)
            return
        }
        dbus_connection_steal_borrowed_message(connection, message)
        // The handler takes over the reference: a `MessageRef` around it was an object per call.
        handler(message)
    }

    /// As C text once: a String handed to C is copied into a new C string on every call.
    private static let peerInterface = Array("org.freedesktop.DBus.Peer".utf8CString)
}

/// Which connection loop, if any, this thread leads now. Wake-ups requested from a loop's
/// own thread (a message read, a reply sent by a handler running there) are skipped: the loop
/// dispatches and flushes before it polls again, and a pipe write would only cost it another turn.
enum LoopThread {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static func enter(_ loop: UnsafeMutableRawPointer) { pthread_setspecific(key, loop) }

    static func leave() { pthread_setspecific(key, nil) }

    /// The loop this thread leads now, to put back with `restore`.
    static var current: UnsafeMutableRawPointer? { pthread_getspecific(key) }

    static func restore(_ loop: UnsafeMutableRawPointer?) { pthread_setspecific(key, loop) }

    static func isRunning(_ loop: UnsafeMutableRawPointer?) -> Bool {
        guard let loop else { return false }
        return pthread_getspecific(key) == loop
    }
}
