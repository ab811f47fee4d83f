import Testing

@testable import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// The one socket server: how its socket appears, who it admits, and its connection budget.
@Suite struct UnixSocketListenerTests {
    private func scratchFolder() -> String {
        var template = Array("/tmp/keywell-socket-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        return String(cString: template)
    }

    private func connect(to path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8))
            raw[path.utf8.count] = 0
        }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(status == 0, "connect: \(String(cString: strerror(errno)))")
        return fd
    }

    private func readByte(_ fd: Int32) -> UInt8? {
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        return read(fd, &byte, 1) == 1 ? byte : nil
    }

    @Test func theSocketAppearsListeningWithMode0600AndReplacesAStaleOne() throws {
        let folder = scratchFolder()
        defer { rmdir(folder) }
        let path = folder + "/agent"
        // A stale socket left by an earlier process.
        let stale = try UnixSocketListener(path: path)
        _ = stale
        let listener = try UnixSocketListener(path: path)
        defer { listener.removeSocketFile() }
        var info = stat()
        #expect(lstat(path, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFSOCK)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(lstat(path + ".new", &info) != 0, "the temporary name is gone")
        let client = connect(to: path)
        close(client)
    }

    @Test func anythingButASocketIsRefusedAndLeftAlone() throws {
        let folder = scratchFolder()
        let path = folder + "/control"
        let file = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        close(file)
        defer { unlink(path); rmdir(folder) }
        #expect(throws: UnixSocketError.self) { try UnixSocketListener(path: path) }
        var info = stat()
        #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
    }

    @Test func peersAreAdmittedByTheirCredentialsWithinTheBudget() throws {
        let folder = scratchFolder()
        defer { rmdir(folder) }
        let path = folder + "/budget"
        let listener = try UnixSocketListener(path: path)
        defer { listener.removeSocketFile() }
        let owner = getuid()
        listener.start(
            acceptThreadName: "test-accept", connectionThreadName: "test-conn", maximumConnections: 1,
            UnixSocketListener.Handlers(
                admit: { PeerCredentials.of(socket: $0, pinning: false)?.uid == owner },
                busy: { fd in var byte: UInt8 = 0x42; _ = write(fd, &byte, 1) },
                serve: { fd in
                    var byte: UInt8 = 0x53
                    _ = write(fd, &byte, 1)
                    // Held until the client closes its end.
                    _ = read(fd, &byte, 1)
                },
                failed: { _ in }))
        let first = connect(to: path)
        #expect(readByte(first) == 0x53, "served")
        let second = connect(to: path)
        #expect(readByte(second) == 0x42, "over the budget: told it is busy")
        close(second)
        close(first)
    }

    @Test func peerCredentialsNameThisProcess() {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        let peer = PeerCredentials.of(socket: pair[0], pinning: false)
        #expect(peer?.pid == getpid())
        #expect(peer?.uid == getuid())
    }
}
