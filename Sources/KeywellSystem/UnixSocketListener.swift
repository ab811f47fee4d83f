
#if canImport(Glibc)
import Glibc
#endif

/// Why a Unix socket could not be made to listen.
public struct UnixSocketError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// How every socket keywelld listens on appears in its private runtime folder: made under a
/// temporary name and renamed into place once it listens with mode 0600, so whoever finds the
/// file can connect at once, never meeting a socket that is bound but not yet listening
/// (ECONNREFUSED) or not yet 0600. `UnixSocketListener` uses it, and so does the direct socket,
/// whose listening socket libdbus makes (docs/dbus-layer.md, "The direct socket").
public enum UnixSocketPlacement {
    /// The name to bind before `publish`, with `path` and that name cleared of a stale socket
    /// (the caller holds the daemon's instance lock, so nobody else can be listening there);
    /// anything but a socket is left alone and refused.
    public static func temporaryName(for path: String) throws(UnixSocketError) -> String {
        let temporary = path + ".new"
        for stale in [path, temporary] {
            var existing = stat()
            if lstat(stale, &existing) == 0 {
                guard existing.st_mode & S_IFMT == S_IFSOCK else { throw UnixSocketError("\(stale) exists and is not a socket") }
                unlink(stale)
            }
        }
        return temporary
    }

    /// Gives the socket listening at `temporary` mode 0600 and renames it to `path`; on failure
    /// the temporary socket file is removed.
    public static func publish(_ temporary: String, at path: String) throws(UnixSocketError) {
        guard chmod(temporary, 0o600) == 0, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw UnixSocketError("cannot listen on \(path): \(reason)")
        }
    }
}

/// A listening Unix stream socket in the daemon's private runtime folder, and the loop that
/// accepts on it: the one way keywelld serves a socket of its own (the PAM module's control
/// socket, the SSH agent; docs/design.md, "Threads"). It appears as `UnixSocketPlacement` says,
/// and admits a peer (`PeerCredentials`) before a byte is read, within a connection budget.
public final class UnixSocketListener: Sendable {
    public let path: String
    private let listener: FileDescriptor
    private let activeConnections = Protected(0)

    /// Binds and listens, replacing a stale socket (the caller holds the daemon's instance lock,
    /// so nobody else can be listening there); refuses to replace anything but a socket.
    public init(path: String, backlog: Int32 = 32) throws(UnixSocketError) {
        self.path = path
        let temporary = try UnixSocketPlacement.temporaryName(for: path)
        guard let address = UnixSocketAddress(path: temporary) else {
            throw UnixSocketError("the socket path \(path) is too long")
        }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw UnixSocketError("socket: \(Errno.current.description)") }
        let socket = FileDescriptor(rawValue: fd)
        let bound = address.withSocketAddress { bind(fd, $0, $1) }
        guard bound == 0, listen(fd, backlog) == 0 else {
            let reason = Errno.current.description
            try? socket.close()
            unlink(temporary)
            throw UnixSocketError("cannot listen on \(path): \(reason)")
        }
        do { try UnixSocketPlacement.publish(temporary, at: path) } catch {
            try? socket.close()
            throw error
        }
        listener = socket
    }

    /// What the accept loop does with each connection. Every closure runs with the connection
    /// still open; the loop closes it afterwards.
    public struct Handlers: Sendable {
        /// Whether to serve this peer at all (checked before a byte is read).
        public var admit: @Sendable (FileDescriptor) -> Bool
        /// Said to an admitted peer when `maximumConnections` are already being served.
        public var busy: @Sendable (FileDescriptor) -> Void
        /// Serves the connection, on a thread of its own.
        public var serve: @Sendable (FileDescriptor) -> Void
        /// A fatal accept error: the loop ends after reporting it.
        public var failed: @Sendable (String) -> Void

        public init(admit: @escaping @Sendable (FileDescriptor) -> Bool, busy: @escaping @Sendable (FileDescriptor) -> Void,
                    serve: @escaping @Sendable (FileDescriptor) -> Void, failed: @escaping @Sendable (String) -> Void) {
            self.admit = admit
            self.busy = busy
            self.serve = serve
            self.failed = failed
        }
    }

    /// Starts the accepting thread: each admitted connection is served on a short-lived thread
    /// of its own, at most `maximumConnections` at once, so a stalled client holds up nobody.
    public func start(acceptThreadName: String, connectionThreadName: String, maximumConnections: Int,
                      connectionStackSize: Int = 512 << 10, _ handlers: Handlers) {
        startDetachedThread(name: acceptThreadName, stackSize: 256 << 10) { [self] in
            acceptLoop(connectionThreadName, maximumConnections, connectionStackSize, handlers)
        }
    }

    /// Removes the socket file (at a clean exit).
    public func removeSocketFile() {
        unlink(path)
    }

    private func acceptLoop(_ threadName: String, _ maximumConnections: Int, _ stackSize: Int, _ handlers: Handlers) {
        while true {
            // FD_CLOEXEC right after accept is enough: a child the daemon starts (pinentry) gets
            // only fds 0-2 whatever is open, as ChildSpawner closes the rest.
            let accepted = accept(listener.rawValue, nil, nil)
            if accepted >= 0 { _ = fcntl(accepted, F_SETFD, FD_CLOEXEC) }
            if accepted < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM {
                    usleep(100_000)
                    continue
                }
                handlers.failed("accept failed: \(Errno.current.description)")
                return
            }
            // The loop owns each connection: every path below closes it exactly once.
            let connection = FileDescriptor(rawValue: accepted)
            guard handlers.admit(connection) else {
                try? connection.close()
                continue
            }
            let admitted = activeConnections.withLock { active -> Bool in
                guard active < maximumConnections else { return false }
                active += 1
                return true
            }
            guard admitted else {
                connection.closeAfter { handlers.busy(connection) }
                continue
            }
            startDetachedThread(name: threadName, stackSize: stackSize) { [self] in
                connection.closeAfter { handlers.serve(connection) }
                activeConnections.withLock { $0 -= 1 }
            }
        }
    }
}
