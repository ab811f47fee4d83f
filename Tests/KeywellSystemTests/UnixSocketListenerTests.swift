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

    private func connect(to path: String) throws -> FileDescriptor {
        try FileDescriptor.connectUnixSocket(path, timeoutSeconds: 30)
    }

    private func readByte(_ fd: FileDescriptor) -> UInt8? {
        try? fd.read(exactly: 1)?.first
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
        let client = try connect(to: path)
        #expect(fcntl(client.rawValue, F_GETFD) & FD_CLOEXEC != 0, "the client socket is closed on exec")
        try client.close()
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
                admit: { PeerCredentials.of($0, pinning: false)?.uid == owner },
                busy: { fd in try? fd.sendAll([0x42]) },
                serve: { fd in
                    try? fd.sendAll([0x53])
                    // Held until the client closes its end.
                    _ = try? fd.read(exactly: 1)
                },
                failed: { _ in }))
        let first = try connect(to: path)
        #expect(readByte(first) == 0x53, "served")
        let second = try connect(to: path)
        #expect(readByte(second) == 0x42, "over the budget: told it is busy")
        try second.close()
        try first.close()
    }

    @Test func theClientSaysWhichStepFailed() throws {
        let folder = scratchFolder()
        defer { rmdir(folder) }
        let missing = folder + "/nobody"
        #expect(throws: UnixSocketConnectError.notConnected(missing, .noEntry)) { try connect(to: missing) }
        // sun_path holds 107 bytes and a NUL: one byte more is refused before any socket is made.
        let longest = "/" + String(repeating: "a", count: 106)
        #expect(throws: UnixSocketConnectError.notConnected(longest, .noEntry)) { try connect(to: longest) }
        let tooLong = longest + "a"
        #expect(throws: UnixSocketConnectError.pathTooLong(tooLong)) { try connect(to: tooLong) }
        #expect(UnixSocketConnectError.pathTooLong(tooLong).description.contains("longer than 107 bytes"))
        #expect(throws: UnixSocketError.self) { try UnixSocketListener(path: tooLong) }
    }

    @Test func sendingToAPeerThatLeftIsEPIPENotASignal() throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let ours = FileDescriptor(rawValue: pair[0])
        defer { try? ours.close() }
        try FileDescriptor(rawValue: pair[1]).close()
        // Without MSG_NOSIGNAL this would raise SIGPIPE and end the test run.
        #expect(throws: Errno(rawValue: EPIPE)) { try ours.sendAll(Array(repeating: 7, count: 100_000)) }
    }

    @Test func aReceiveTimeoutIsWouldBlock() throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let (ours, theirs) = (FileDescriptor(rawValue: pair[0]), FileDescriptor(rawValue: pair[1]))
        defer { try? ours.close(); try? theirs.close() }
        try ours.setTimeouts(receiveSeconds: 1, sendSeconds: nil)
        #expect(throws: Errno.wouldBlock) { try ours.read(exactly: 4) }
        try theirs.sendAll([1, 2])
        theirs.shutdownSending()
        #expect(try ours.read(exactly: 4) == nil, "the stream ended two bytes short")
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
