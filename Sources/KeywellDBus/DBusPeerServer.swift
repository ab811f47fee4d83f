import CDBus
import KeywellSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A Unix socket where clients talk D-Bus to this process directly, without a bus in between
/// (docs/dbus-layer.md, "The direct socket"): libdbus's server authenticates each client
/// (EXTERNAL only, and only this process's own user), and every connection is a
/// `DBusConnection` of its own, whose loop and handlers run on one worker pool all of them share.
///
/// What it saves a short-lived client is the bus's hops: no Hello, the call and its reply go
/// straight across, and the caller's credentials come from the socket (`PeerCredentials`)
/// instead of two questions to the bus.
// @unchecked: `watches` and `connections` are locked, `handshakes` is the accept thread's alone;
// the server pointer is libdbus's (thread-safe).
public final class DBusPeerServer: @unchecked Sendable {
    /// Connections served at once (each holds a worker thread while it lives); beyond it a new
    /// client is closed at once, and goes to the bus instead.
    public static let maximumConnections = 64
    /// A client that has not authenticated by then is closed.
    public static let authenticationDeadline: Duration = .seconds(5)

    public let path: String
    private let server: OpaquePointer
    /// None kept once idle: a client of the socket (git's helper, the CLI) makes a call or two
    /// and leaves, and a kept worker would only hold its stack and malloc cache
    /// (docs/performance.md, "The daemon").
    private let workers = WorkerPool(name: "dbus-peer", keepAlive: 0)
    private let wakePipe: WakePipe
    /// libdbus's `DBusWatch` pointers, as addresses (a pointer is not Sendable).
    private let watches = Protected<[Int]>([])
    private let connections = Protected<[ObjectIdentifier: DBusConnection]>([:])
    private let nextNumber = Atomic<Int>(1)
    private let handshakeDeadline: Duration
    /// Connections still authenticating, with the time they must be done by. The accept thread
    /// alone touches it, and wakes for the earliest: no timer (and no thread woken) per client.
    private var handshakes: [(connection: Weak<DBusConnection>, deadline: UInt64)] = []
    private let stopping = Atomic<Bool>(false)
    private let stopped = ConditionLock()
    private var acceptLoopEnded = false
    private let prepare: @Sendable (DBusConnection) -> Void
    private let ended: @Sendable (DBusConnection) -> Void
    /// The socket file as bound, so that stopping removes it only while it is still ours.
    private let socketIdentity: (device: UInt64, inode: UInt64)?

    /// Listens at `path` (a file left there by an earlier process is replaced). `prepare` runs
    /// for every new connection before any of its calls is read (register objects there);
    /// `ended` once it is gone; a client still authenticating after `handshakeDeadline` is
    /// closed. The accept thread keeps the server alive until `stop()`.
    public init(path: String, handshakeDeadline: Duration = authenticationDeadline,
                prepare: @escaping @Sendable (DBusConnection) -> Void,
                ended: @escaping @Sendable (DBusConnection) -> Void) throws(DBusError) {
        _ = threadsInitialized
        self.path = path
        self.handshakeDeadline = handshakeDeadline
        self.prepare = prepare
        self.ended = ended
        // libdbus binds and listens under the temporary name; the socket appears at `path` as
        // every socket of the daemon does (UnixSocketPlacement).
        let temporary: String
        do { temporary = try UnixSocketPlacement.temporaryName(for: path) } catch { throw .failed(error.description) }
        guard let address = DBusConnection.unixSocketAddress(temporary) else { throw .noMemory() }
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        guard let server = dbus_server_listen(address, &error) else { throw takeError(&error) }
        self.server = server
        do {
            try UnixSocketPlacement.publish(temporary, at: path)
            wakePipe = try WakePipe()
        } catch {
            dbus_server_disconnect(server)
            dbus_server_unref(server)
            throw (error as? DBusError) ?? .failed("\(error)")
        }
        var status = stat()
        socketIdentity = lstat(path, &status) == 0 ? (UInt64(status.st_dev), UInt64(status.st_ino)) : nil

        var mechanisms: [UnsafePointer<CChar>?] = [UnsafePointer(strdup("EXTERNAL")), nil]
        dbus_server_set_auth_mechanisms(server, &mechanisms)
        free(UnsafeMutablePointer(mutating: mechanisms[0]))

        let me = Unmanaged.passUnretained(self).toOpaque()
        dbus_server_set_watch_functions(server, { watch, data in
            Unmanaged<DBusPeerServer>.fromOpaque(data!).takeUnretainedValue().watchesChanged { $0.append(Int(bitPattern: watch)) }
            return 1
        }, { watch, data in
            Unmanaged<DBusPeerServer>.fromOpaque(data!).takeUnretainedValue().watchesChanged { list in list.removeAll { $0 == Int(bitPattern: watch) } }
        }, { _, data in
            Unmanaged<DBusPeerServer>.fromOpaque(data!).takeUnretainedValue().wakePipe.wake()
        }, me, nil)
        dbus_server_set_new_connection_function(server, { _, connection, data in
            Unmanaged<DBusPeerServer>.fromOpaque(data!).takeUnretainedValue().accept(connection!)
        }, me, nil)
        startDetachedThread(name: "dbus-peer-accept", stackSize: 256 << 10) { [self] in acceptLoop() }
    }

    deinit {
        stop()
        dbus_server_unref(server)
    }

    /// Connections being served now.
    public var connectionCount: Int { connections.withLock { $0.count } }

    /// Stops listening, removes the socket file (if it is still the one bound here) and closes
    /// every connection. Idempotent.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wakePipe.wake()
        stopped.withLock { while !acceptLoopEnded { stopped.wait(untilNanoseconds: nil) } }
        dbus_server_disconnect(server)
        var status = stat()
        if let socketIdentity, lstat(path, &status) == 0,
           UInt64(status.st_dev) == socketIdentity.device, UInt64(status.st_ino) == socketIdentity.inode {
            unlink(path)
        }
        for connection in connections.withLock({ Array($0.values) }) { connection.close() }
        workers.stop()
    }

    private func watchesChanged(_ change: (inout [Int]) -> Void) {
        watches.withLock { change(&$0) }
        wakePipe.wake()
    }

    /// Polls the listening socket; libdbus accepts and calls `accept` on this thread.
    private func acceptLoop() {
        while !stopping.load(ordering: .acquiring) {
            let ready = watches.withLock { $0 }.compactMap { OpaquePointer(bitPattern: $0) }.filter { dbus_watch_get_enabled($0) != 0 }
            var pollSet = ready.map { pollfd(fd: dbus_watch_get_unix_fd($0), events: Int16(POLLIN), revents: 0) }
            pollSet.append(pollfd(fd: wakePipe.readDescriptor, events: Int16(POLLIN), revents: 0))
            // A signal restarts the wait with this whole timeout: a late handshake may then be
            // closed up to that much later, never sooner.
            guard (try? FileDescriptor.wait(&pollSet, milliseconds: closeLateHandshakes())) != nil else { break }
            if pollSet[pollSet.count - 1].revents != 0 { wakePipe.drain() }
            for (index, watch) in ready.enumerated() where pollSet[index].revents != 0 {
                // Still registered: libdbus may have removed it while we polled.
                guard watches.withLock({ $0.contains(Int(bitPattern: watch)) }) else { continue }
                var flags: UInt32 = 0
                if pollSet[index].revents & Int16(POLLIN) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
                if pollSet[index].revents & Int16(POLLERR) != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
                if pollSet[index].revents & Int16(POLLHUP) != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
                dbus_watch_handle(watch, flags)
            }
        }
        stopped.withLock {
            acceptLoopEnded = true
            stopped.broadcast()
        }
    }

    /// Closes the connections whose handshake is late and forgets those done or gone; the poll
    /// timeout (ms) until the next deadline, -1 with none pending.
    private func closeLateHandshakes() -> Int32 {
        guard !handshakes.isEmpty else { return -1 }
        let now = monotonicNanoseconds()
        var late: [DBusConnection] = []
        handshakes.removeAll { entry in
            guard let connection = entry.connection.value, connection.isConnected,
                  dbus_connection_get_is_authenticated(connection.raw) == 0 else { return true }
            guard entry.deadline <= now else { return false }
            late.append(connection)
            return true
        }
        // Closed off this thread: closing waits for the connection's loop to finish.
        for connection in late { workers.submit { connection.close() } }
        guard let next = handshakes.map(\.deadline).min() else { return -1 }
        return Int32(clamping: (next - now) / 1_000_000 + 1)
    }

    /// A client connected (not yet authenticated). Not referenced, libdbus closes it on return.
    private func accept(_ raw: OpaquePointer) {
        guard !stopping.load(ordering: .acquiring), connectionCount < Self.maximumConnections else { return }
        dbus_connection_ref(raw)
        dbus_connection_set_exit_on_disconnect(raw, 0)
        // EXTERNAL proves the client's uid; libdbus would also let root in.
        dbus_connection_set_unix_user_function(raw, { _, uid, _ in uid == getuid() ? 1 : 0 }, nil, nil)
        let name = "peer:\(nextNumber.add(1, ordering: .relaxed).oldValue)"
        let holder = ConnectionHolder()
        let connection: DBusConnection
        do {
            connection = try DBusConnection(accepted: raw, peerName: name, workers: workers) { [weak self] in
                // After the loop's job has returned, on the same worker (nothing is woken for
                // it): the last reference closes the connection, which waits for its loop to
                // finish, so it must not be dropped from inside the loop.
                self?.workers.submitAfterCurrentJob { [weak self] in
                    guard let self, let connection = holder.connection else { return }
                    ended(connection)
                    connections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(connection)) }
                    holder.connection = nil
                }
            }
        } catch {
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            return
        }
        holder.connection = connection
        connections.withLock { $0[ObjectIdentifier(connection)] = connection }
        prepare(connection)
        connection.startLoop()
        handshakes.append((Weak(connection), deadline(after: handshakeDeadline)))
    }
}

/// Lets a connection's end find the connection made after its closure.
private final class ConnectionHolder: Sendable {
    private let lock = Protected<DBusConnection?>(nil)
    var connection: DBusConnection? {
        get { lock.withLock { $0 } }
        set { lock.withLock { $0 = newValue } }
    }
}

/// A reference that does not keep its object alive.
private struct Weak<Object: AnyObject> {
    weak var value: Object?
    init(_ value: Object) { self.value = value }
}
