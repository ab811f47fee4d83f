#if canImport(Glibc)
import Glibc
#endif

/// A Unix socket's path as `sockaddr_un`: the one place its length is checked against
/// `sun_path` (108 bytes on Linux, the closing NUL included), for the listener and every client.
struct UnixSocketAddress {
    private var storage = sockaddr_un()

    /// The longest path a Unix socket can have, in bytes.
    static let maximumPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Nil when `path` is too long or holds a NUL (the kernel would read a different path).
    init?(path: String) {
        let bytes = Array(path.utf8)
        guard bytes.count <= Self.maximumPathLength, !bytes.contains(0) else { return nil }
        storage.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
    }

    func withSocketAddress<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        withUnsafePointer(to: storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}

/// Why a Unix socket could not be reached, step by step, so each client can say it its own way.
public enum UnixSocketConnectError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The path does not fit a socket address (`UnixSocketAddress`); nothing was tried.
    case pathTooLong(String)
    /// `socket(2)` failed (out of descriptors, most likely).
    case noSocket(Errno)
    /// `connect(2)` failed: ENOENT when no socket is there, ECONNREFUSED when nobody listens on
    /// it, EAGAIN when the listener's backlog stayed full for the whole timeout.
    case notConnected(String, Errno)

    public var description: String {
        switch self {
        case .pathTooLong(let path):
            "the socket path \(path) is longer than \(UnixSocketAddress.maximumPathLength) bytes"
        case .noSocket(let error): "cannot make a socket: \(error)"
        case .notConnected(let path, let error): "cannot connect to \(path): \(error)"
        }
    }
}

extension FileDescriptor {
    /// The one Unix-socket client: a new stream socket, closed on exec, connected to `path`. It is
    /// the caller's to close. `timeoutSeconds`, when given, is set before the connect, so it
    /// bounds a wait on a listener whose backlog is full as well as every later send and receive
    /// (`setTimeouts`). An interrupted connect is made again, by the one EINTR rule: on a Unix
    /// socket Linux leaves the socket unconnected when a signal interrupts the wait, so the
    /// second call starts afresh (TCP would answer EALREADY instead).
    public static func connectUnixSocket(_ path: String, timeoutSeconds: Int? = nil) throws(UnixSocketConnectError) -> FileDescriptor {
        guard let address = UnixSocketAddress(path: path) else { throw .pathTooLong(path) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .noSocket(.current) }
        let connection = FileDescriptor(rawValue: fd)
        if let timeoutSeconds { try? connection.setTimeouts(receiveSeconds: timeoutSeconds, sendSeconds: timeoutSeconds) }
        let connected = address.withSocketAddress { pointer, length in retryingOnInterrupt { connect(fd, pointer, length) } }
        guard connected == 0 else {
            let error = Errno.current
            try? connection.close()
            throw .notConnected(path, error)
        }
        return connection
    }

    /// SO_RCVTIMEO and SO_SNDTIMEO, each when given: a receive or send that waits longer throws
    /// `.wouldBlock`, so a stalled peer holds up nobody.
    public func setTimeouts(receiveSeconds: Int?, sendSeconds: Int?) throws(Errno) {
        for (option, seconds) in [(SO_RCVTIMEO, receiveSeconds), (SO_SNDTIMEO, sendSeconds)] {
            guard let seconds else { continue }
            var timeout = timeval(tv_sec: seconds, tv_usec: 0)
            guard setsockopt(rawValue, SOL_SOCKET, option, &timeout, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
                throw .current
            }
        }
    }

    /// `shutdown(2)` of the sending side: the peer reads an end of stream once what was sent is read.
    public func shutdownSending() {
        _ = shutdown(rawValue, Int32(SHUT_WR))
    }
}
