import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSystem
import Logging
import Synchronization

/// The PAM module's private channel: `$XDG_RUNTIME_DIR/keywell/control` (docs/control-protocol.md).
///
/// Bound early in start-up, before any bus exists. One thread accepts; each accepted connection
/// is checked with `SO_PEERCRED` (root, the login process, or the user alone) before a byte is
/// read, then served on its own short-lived thread with 5 s timeouts, so a stalled client never
/// stalls the daemon.
final class ControlSocketServer: Sendable {
    typealias Handler = @Sendable (ControlProtocol.Request, LoginSessions.Sender) -> LoginSessions.Outcome

    let path: String
    private let handler: Handler
    private let logger: Logger
    private let listener: Int32
    private let owner = getuid()
    /// Connections being served right now.
    private let activeConnections = Mutex(0)
    private let maximumConnections = 16

    /// Binds and listens at once, replacing a stale socket (the caller holds the instance lock,
    /// so nobody else can be listening there). The socket is made under a temporary name and
    /// renamed into place once it listens with its final mode: whoever finds the file (the PAM
    /// module, a test) can connect at once, never meeting a socket that is bound but not yet
    /// listening (ECONNREFUSED) or not yet 0600.
    init(path: String, logger: Logger, handler: @escaping Handler) throws(DaemonError) {
        self.path = path
        self.handler = handler
        self.logger = logger
        let temporary = path + ".new"
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(temporary.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw DaemonError("the control socket path \(path) is too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        for stale in [path, temporary] {
            var existing = stat()
            if lstat(stale, &existing) == 0 {
                guard existing.st_mode & S_IFMT == S_IFSOCK else {
                    throw DaemonError("\(stale) exists and is not a socket")
                }
                unlink(stale)
            }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw DaemonError("socket: \(String(cString: strerror(errno)))") }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, chmod(temporary, 0o600) == 0, listen(fd, 32) == 0, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            unlink(temporary)
            throw DaemonError("cannot listen on \(path): \(reason)")
        }
        listener = fd
    }

    func start() {
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "control-accept"
        thread.stackSize = 256 << 10
        thread.start()
    }

    /// Removes the socket file (at a clean exit, so the module starts a new daemon at once).
    func removeSocketFile() {
        unlink(path)
    }

    private func acceptLoop() {
        while true {
            // FD_CLOEXEC right after accept is enough: a child the daemon starts (pinentry) gets
            // only fds 0-2 whatever is open, as ChildSpawner closes the rest.
            let connection = accept(listener, nil, nil)
            if connection >= 0 { _ = fcntl(connection, F_SETFD, FD_CLOEXEC) }
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM {
                    usleep(100_000)
                    continue
                }
                logger.error("control socket: accept failed: \(String(cString: strerror(errno)))")
                return
            }
            guard let peer = peerCredentials(connection), peer.uid == 0 || peer.uid == owner else {
                // Someone else: close without reading a byte.
                close(connection)
                continue
            }
            let maximumConnections = maximumConnections
            let admitted = activeConnections.withLock { active -> Bool in
                guard active < maximumConnections else { return false }
                active += 1
                return true
            }
            guard admitted else {
                ControlProtocol.writeAll(connection, ControlProtocol.response(status: SecStatus.allocate, message: "busy"))
                close(connection)
                continue
            }
            let thread = Thread { [self] in
                serve(connection, peer: peer)
                activeConnections.withLock { $0 -= 1 }
            }
            thread.name = "control"
            thread.stackSize = 512 << 10
            thread.start()
        }
    }

    private func serve(_ connection: Int32, peer: PeerCredentials) {
        defer { close(connection) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let outcome: LoginSessions.Outcome
        do {
            let request = try ControlProtocol.readRequest(from: connection)
            logger.debug("control request \(Character(UnicodeScalar(request.operation.rawValue))) from pid \(peer.pid) (uid \(peer.uid))")
            outcome = handler(request, peer.uid == 0 ? .root : .user)
        } catch let rejection as ControlProtocol.Rejection {
            logger.notice("control request from pid \(peer.pid) refused: \(rejection.message)")
            outcome = LoginSessions.Outcome(status: rejection.status, message: rejection.message)
        } catch {
            logger.debug("control client pid \(peer.pid) went away or stalled")
            return
        }
        ControlProtocol.writeAll(connection, ControlProtocol.response(status: outcome.status, message: outcome.message))
        shutdown(connection, Int32(SHUT_WR))
    }

    private func peerCredentials(_ connection: Int32) -> PeerCredentials? {
        PeerCredentials.of(socket: connection, pinning: false)
    }
}
