#if canImport(Glibc)
import Glibc
#endif

/// What the kernel recorded about the process at the other end of a Unix socket when it
/// connected: `SO_PEERCRED`, `SO_PEERPIDFD` (Linux 6.5 and later) and `SO_PEERSEC`. Asked of
/// the socket itself, with no round trip to anyone (docs/dbus-layer.md, "The direct socket"). The
/// control socket, the SSH agent and the direct socket all ask it.
public struct PeerCredentials: Sendable {
    public let pid: pid_t
    public let uid: uid_t
    /// A pidfd for the very process that connected, owned by whoever takes it; nil on a kernel
    /// without `SO_PEERPIDFD`.
    public let processFD: Int32?
    /// The AppArmor or SELinux label, NUL-terminated as the kernel gives it; nil without one.
    public let securityLabel: [UInt8]?

    /// Not in Debian 12's headers yet (asm-generic/socket.h, Linux 6.5).
    static let peerPIDFDOption: Int32 = 77

    /// The peer of `socket`; nil when the kernel cannot say (not a Unix socket). `pinning`:
    /// also a pidfd and the security label, for working out who the peer is.
    public static func of(socket: Int32, pinning: Bool = true) -> PeerCredentials? {
        var credentials = KernelUcred()
        var length = socklen_t(MemoryLayout<KernelUcred>.size)
        guard getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return nil }
        guard pinning else { return PeerCredentials(pid: credentials.pid, uid: credentials.uid, processFD: nil, securityLabel: nil) }
        var pidfd: Int32 = -1
        var pidfdLength = socklen_t(MemoryLayout<Int32>.size)
        let hasPIDFD = getsockopt(socket, SOL_SOCKET, peerPIDFDOption, &pidfd, &pidfdLength) == 0 && pidfd >= 0
        return PeerCredentials(pid: credentials.pid, uid: credentials.uid, processFD: hasPIDFD ? pidfd : nil,
                               securityLabel: securityLabel(of: socket))
    }

    /// The peer of a socket Keywell holds as a `FileDescriptor` (see `of(socket:pinning:)`).
    public static func of(_ socket: FileDescriptor, pinning: Bool = true) -> PeerCredentials? {
        of(socket: socket.rawValue, pinning: pinning)
    }

    private static func securityLabel(of socket: Int32) -> [UInt8]? {
        var label = [UInt8](repeating: 0, count: 256)
        var length = socklen_t(label.count)
        guard getsockopt(socket, SOL_SOCKET, SO_PEERSEC, &label, &length) == 0, length > 0 else { return nil }
        return Array(label[..<Int(length)])
    }

    /// Whether this kernel hands out a pidfd for a socket's peer, tried on a socket pair.
    public static let kernelPinsPeers: Bool = {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else { return false }
        defer { close(pair[0]); close(pair[1]) }
        guard let pidfd = of(socket: pair[0])?.processFD else { return false }
        close(pidfd)
        return true
    }()
}

/// `struct ucred` (pid, uid, gid), which the Glibc module hides behind _GNU_SOURCE.
private struct KernelUcred {
    var pid: pid_t = 0
    var uid: uid_t = 0
    var gid: gid_t = 0
}
