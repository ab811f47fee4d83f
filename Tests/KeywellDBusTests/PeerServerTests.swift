import CDBus
import Foundation
import KeywellSystem
import KeywellTestSupport
import Testing

@testable import KeywellDBus

/// `DBusPeerServer` and `DBusCallConnection(directSocket:)`: real libdbus on both ends of a Unix
/// socket in a private folder, no bus.
@Suite("Direct socket")
struct PeerServerTests {
    /// What the served object saw of each call: its sender and the socket's peer.
    final class Seen: @unchecked Sendable {
        let lock = NSLock()
        var ended: [String] = []
    }

    private static func object() -> DBusClosureObject {
        DBusClosureObject(interfaces: [ServiceFixture.interface]) { call in
            let peer = call.connection.peerCredentials()
            if let fd = peer?.processFD { close(fd) }
            let pid = Int64(peer?.pid ?? -1)
            let uid = UInt32(peer?.uid ?? 0)
            var values: [DBusValue] = [.string(call.sender), .int64(pid), .bool(peer?.processFD != nil), .uint32(uid)]
            values += call.arguments
            _ = call.reply(values)
        }
    }

    private static func server(in folder: TemporaryDirectory, seen: Seen) throws -> DBusPeerServer {
        try DBusPeerServer(path: folder.path + "/native", prepare: { connection in
            try? connection.register(object(), at: ServiceFixture.path)
        }, ended: { connection in
            seen.lock.lock()
            seen.ended.append(connection.peerName ?? "?")
            seen.lock.unlock()
        })
    }

    /// `connect` or `bind` of a raw socket to the Unix socket path `path`.
    private static func at(_ path: String, _ fd: Int32,
                           _ operation: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8CString)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in bytes.withUnsafeBytes { raw.copyBytes(from: $0) } }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { operation(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    private static func echo(_ client: DBusCallConnection, _ arguments: [DBusValue] = [],
                             timeout: Duration = .seconds(25)) throws(KeywellDBus.DBusError) -> [DBusValue] {
        try client.call(destination: nil, path: ServiceFixture.path, interface: ServiceFixture.interfaceName,
                        member: "Echo", arguments: arguments, timeout: timeout)
    }

    @Test func aClientIsServedAndKnownByItsSocket() throws {
        let folder = try TemporaryDirectory(prefix: "kwpeer")
        chmod(folder.path, 0o700)
        let seen = Seen()
        let server = try Self.server(in: folder, seen: seen)
        defer { server.stop() }
        var mode = stat()
        #expect(lstat(folder.path + "/native", &mode) == 0 && mode.st_mode & 0o777 == 0o600)

        let client = try DBusCallConnection(directSocket: folder.path + "/native")
        #expect(client.isDirect)
        let reply = try Self.echo(client, [.string("x")])
        // A name no bus connection can have, the kernel's pid and uid, and a pidfd where the kernel gives one.
        #expect(reply[0].stringValue?.hasPrefix("peer:") == true)
        #expect(reply[1] == .int64(Int64(getpid())))
        #expect(reply[2] == .bool(PeerCredentials.kernelPinsPeers))
        #expect(reply[3] == .uint32(getuid()))
        #expect(reply[4] == .string("x"))
        // A second call on the same connection, and a second client with another name.
        #expect(try Self.echo(client)[0] == reply[0])
        let other = try DBusCallConnection(directSocket: folder.path + "/native")
        #expect(try Self.echo(other)[0] != reply[0])
        #expect(server.connectionCount == 2)
    }

    @Test func aClosedClientIsForgottenAndStoppingRemovesTheSocket() throws {
        let folder = try TemporaryDirectory(prefix: "kwpeer")
        chmod(folder.path, 0o700)
        let seen = Seen()
        let server = try Self.server(in: folder, seen: seen)
        do {
            let client = try DBusCallConnection(directSocket: folder.path + "/native")
            _ = try Self.echo(client)
        }
        #expect(eventually { server.connectionCount == 0 })
        #expect(eventually { seen.lock.withLock { seen.ended.count } == 1 })
        server.stop()
        #expect(access(folder.path + "/native", F_OK) != 0)
        // Nobody listens any more: a client fails at once (and would go to the bus).
        #expect(throws: KeywellDBus.DBusError.self) { try DBusCallConnection(directSocket: folder.path + "/native") }
    }

    /// As shell prompts and git start them: one short-lived client after another, each with one
    /// call. Every connection must end when its client leaves (an ending that stalls keeps its
    /// descriptors and thread for good, and the server full), and the server must still serve.
    @Test func manyShortLivedClientsLeaveNothingBehind() throws {
        let folder = try TemporaryDirectory(prefix: "kwpeer")
        chmod(folder.path, 0o700)
        let seen = Seen()
        let server = try Self.server(in: folder, seen: seen)
        defer { server.stop() }
        let clients = 300
        for _ in 0..<clients {
            let client = try DBusCallConnection(directSocket: folder.path + "/native")
            #expect(try Self.echo(client).count == 4)
        }
        #expect(eventually(timeout: .seconds(20)) { server.connectionCount == 0 }, "\(server.connectionCount) connections still open")
        #expect(eventually(timeout: .seconds(20)) { seen.lock.withLock { seen.ended.count } == clients })
        #expect(try Self.echo(DBusCallConnection(directSocket: folder.path + "/native")).count == 4)
    }

    /// Clients that leave while their replies are on the way, answered from another thread: the
    /// write fails on that thread, which ends the connection there (libdbus frees its watches
    /// on that thread) while the loop may be reading the same socket's hang-up through them
    /// (docs/dbus-layer.md, "Reading through the watches"). The server must forget every one and
    /// go on serving.
    @Test func clientsLeavingWhileAnotherThreadSendsTheirReplies() throws {
        let folder = try TemporaryDirectory(prefix: "kwpeer")
        chmod(folder.path, 0o700)
        let seen = Seen()
        let server = try DBusPeerServer(path: folder.path + "/native", prepare: { connection in
            try? connection.register(DBusClosureObject(interfaces: [ServiceFixture.interface]) { call in
                let delay = call.arguments.first?.uint32Value ?? 0
                Thread.detachNewThread {
                    if delay > 0 { usleep(delay) }
                    _ = call.reply([.string("late")])
                }
            }, at: ServiceFixture.path)
        }, ended: { connection in
            seen.lock.withLock { seen.ended.append(connection.peerName ?? "?") }
        })
        defer { server.stop() }
        let clients = 200
        for round in 0..<clients {
            let client = try DBusCallConnection(directSocket: folder.path + "/native")
            // Gives up before the reply (or just as it comes): the client's socket closes as it goes.
            _ = try? Self.echo(client, [.uint32(UInt32(round % 7) * 300)], timeout: .milliseconds(1))
        }
        #expect(eventually(timeout: .seconds(20)) { server.connectionCount == 0 }, "\(server.connectionCount) connections still open")
        #expect(eventually(timeout: .seconds(20)) { seen.lock.withLock { seen.ended.count } == clients })
        #expect(try Self.echo(DBusCallConnection(directSocket: folder.path + "/native"), [.uint32(0)]) == [.string("late")])
    }

    /// Whoever holds a connection may let go of it from the connection's own end (the server's
    /// bookkeeping does): closing it then must not wait for the very loop that is ending, or
    /// that thread blocks for good and the connection's descriptors stay open.
    @Test func aLoopReleasedAsItEndsDoesNotWaitForItself() throws {
        final class Owner: Sendable {
            let loop: ConnectionLoop
            init(_ loop: ConnectionLoop) { self.loop = loop }
            deinit { loop.stop() }
        }
        let folder = try TemporaryDirectory(prefix: "kwpeer")
        chmod(folder.path, 0o700)
        let server = try Self.server(in: folder, seen: Seen())
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        let raw = try #require(dbus_connection_open_private("unix:path=\(folder.path)/native", &error))
        defer { dbus_connection_unref(raw) }
        dbus_connection_set_exit_on_disconnect(raw, 0)
        let workers = WorkerPool(name: "test-loop")
        defer { workers.stop() }
        let owner = Protected<Owner?>(nil)
        let loop = try ConnectionLoop(connection: raw, workers: workers, onFinish: {
            _ = owner.withLock { $0.take() }  // the last reference, dropped on the loop's thread
        })
        owner.withLock { $0 = Owner(loop) }
        loop.start(methodCalls: { dbus_message_unref($0) })
        #expect(eventually { server.connectionCount == 1 })
        server.stop()  // the client's loop sees the hang-up and ends
        #expect(eventually(timeout: .seconds(10)) { loop.isFinished })
        #expect(owner.withLock { $0 == nil })
    }

    /// A client that connects and never finishes the handshake holds a connection (and a
    /// thread) only until the deadline; one that finished in time is left alone.
    @Test func aClientSilentPastTheHandshakeDeadlineIsClosed() throws {
        let folder = try TemporaryDirectory(prefix: "kwpeer")
        chmod(folder.path, 0o700)
        let seen = Seen()
        let server = try DBusPeerServer(path: folder.path + "/native", handshakeDeadline: .milliseconds(300), prepare: { connection in
            try? connection.register(Self.object(), at: ServiceFixture.path)
        }, ended: { connection in
            seen.lock.withLock { seen.ended.append(connection.peerName ?? "?") }
        })
        defer { server.stop() }
        let served = try DBusCallConnection(directSocket: folder.path + "/native")
        #expect(try Self.echo(served).count == 4)

        let silent = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(silent) }
        #expect(Self.at(folder.path + "/native", silent, connect) == 0)
        #expect(eventually { server.connectionCount == 2 })
        // The server hangs up: a read ends (0 bytes) instead of waiting for ever.
        var pollSet = pollfd(fd: silent, events: Int16(POLLIN), revents: 0)
        #expect(poll(&pollSet, 1, 10_000) == 1)
        var byte: UInt8 = 0
        #expect(read(silent, &byte, 1) == 0)
        #expect(eventually { server.connectionCount == 1 })
        // The client that authenticated in time is still served, well past the deadline.
        #expect(try Self.echo(served).count == 4)
    }

    @Test func aFolderOthersCanEnterIsRefusedBeforeConnecting() throws {
        let folder = try TemporaryDirectory(prefix: "kwpeer")
        chmod(folder.path, 0o700)
        let server = try Self.server(in: folder, seen: Seen())
        defer { server.stop() }
        chmod(folder.path, 0o755)
        do {
            _ = try DBusCallConnection(directSocket: folder.path + "/native")
            Issue.record("a socket in a folder others can enter was used")
        } catch {
            #expect(error.name == KeywellDBus.DBusError.Name.accessDenied)
        }
        #expect(server.connectionCount == 0)
        chmod(folder.path, 0o700)
        #expect(try Self.echo(DBusCallConnection(directSocket: folder.path + "/native")).count == 4)
    }

    @Test func aStaleSocketFileIsReplaced() throws {
        let folder = try TemporaryDirectory(prefix: "kwpeer")
        chmod(folder.path, 0o700)
        // A socket file nobody listens on, as a killed daemon leaves behind.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(Self.at(folder.path + "/native", stale, bind) == 0)
        close(stale)
        let server = try Self.server(in: folder, seen: Seen())
        defer { server.stop() }
        #expect(try Self.echo(DBusCallConnection(directSocket: folder.path + "/native")).count == 4)
    }

    /// A listener that takes each client and, after reading what it sent, answers `answer`
    /// (nothing when nil) and hangs up, as a full or stopping server turns a client away.
    private static func turningAway(at path: String, answer: String?) throws -> (socket: Int32, heard: LockedBytes) {
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        try #require(at(path, listener, bind) == 0 && listen(listener, 4) == 0)
        let heard = LockedBytes()
        Thread.detachNewThread {
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = read(client, &buffer, buffer.count)
                if count > 0 { heard.append(buffer[..<count]) }
                if let answer { _ = write(client, answer, answer.utf8.count) }
                close(client)
            }
        }
        return (listener, heard)
    }

    final class LockedBytes: @unchecked Sendable {
        let lock = NSLock()
        var bytes: [UInt8] = []
        func append(_ more: ArraySlice<UInt8>) { lock.withLock { bytes += more } }
    }

    /// The handshake leaves with the first call, in the same write: the server reads the
    /// EXTERNAL line, BEGIN and the message at once (one round trip instead of three).
    @Test func theHandshakeLeavesWithTheFirstCall() throws {
        let folder = try TemporaryDirectory(prefix: "kwpeer")
        chmod(folder.path, 0o700)
        let (listener, heard) = try Self.turningAway(at: folder.path + "/native", answer: nil)
        defer { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }
        let client = try DBusCallConnection(directSocket: folder.path + "/native")
        #expect(throws: KeywellDBus.DBusError.self) { try Self.echo(client, [.string("first")], timeout: .seconds(5)) }
        let text = heard.lock.withLock { heard.bytes }
        let uid = String(geteuid()).utf8.map { String(format: "%02x", $0) }.joined()
        let handshake = Array("\0AUTH EXTERNAL \(uid)\r\nBEGIN\r\n".utf8)
        #expect(Array(text.prefix(handshake.count)) == handshake)
        // The method call itself right behind it: a D-Bus message header (little-endian, method call).
        #expect(text.count > handshake.count + 16 && text[handshake.count] == UInt8(ascii: "l") && text[handshake.count + 1] == 1)
    }

    /// A client with work to do before its call sends the handshake ahead: the server reads it
    /// alone, and the call that follows is answered as usual (its reply read with the OK).
    @Test func theHandshakeCanLeaveAheadOfTheCall() throws {
        let folder = try TemporaryDirectory(prefix: "kwpeer")
        chmod(folder.path, 0o700)
        let (listener, heard) = try Self.turningAway(at: folder.path + "/native", answer: nil)
        let fixture = try ServiceFixture()
        let early = try DBusCallConnection(directSocket: folder.path + "/native", fallbackAddress: fixture.bus.address)
        early.sendHandshakeAhead()
        let uid = String(geteuid()).utf8.map { String(format: "%02x", $0) }.joined()
        #expect(eventually { heard.lock.withLock { heard.bytes } == Array("\0AUTH EXTERNAL \(uid)\r\nBEGIN\r\n".utf8) })
        // That server hung up without an OK: the call goes to the bus.
        #expect(try early.call(destination: ServiceFixture.name, path: ServiceFixture.path, interface: ServiceFixture.interfaceName,
                               member: "Echo", arguments: [.string("late")]) == [.string("late")])
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)

        let served = try TemporaryDirectory(prefix: "kwpeer")
        chmod(served.path, 0o700)
        let server = try Self.server(in: served, seen: Seen())
        defer { server.stop() }
        let client = try DBusCallConnection(directSocket: served.path + "/native")
        client.sendHandshakeAhead()
        client.sendHandshakeAhead()  // once only
        #expect(eventually { server.connectionCount == 1 })
        #expect(try Self.echo(client, [.string("x")]).last == .string("x"))
        #expect(try Self.echo(client, [.string("y")]).last == .string("y"))
        #expect(client.isDirect)
    }

    /// A server that hangs up or refuses before its OK has read no call: with a fallback
    /// address the call goes to that bus instead (and the later ones), without one it fails at
    /// once rather than waiting for its timeout.
    @Test func aServerTurningTheFirstCallAwaySendsItToTheBus() throws {
        let fixture = try ServiceFixture()
        for answer in [nil, "REJECTED EXTERNAL\r\n"] {
            let folder = try TemporaryDirectory(prefix: "kwpeer")
            chmod(folder.path, 0o700)
            let (listener, _) = try Self.turningAway(at: folder.path + "/native", answer: answer)
            defer { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }

            let client = try DBusCallConnection(directSocket: folder.path + "/native", fallbackAddress: fixture.bus.address)
            #expect(client.isDirect)
            let reply = try client.call(destination: ServiceFixture.name, path: ServiceFixture.path,
                                        interface: ServiceFixture.interfaceName, member: "Echo", arguments: [.string("via bus")])
            #expect(reply == [.string("via bus")])
            #expect(!client.isDirect && client.isConnected)
            #expect(try client.call(destination: ServiceFixture.name, path: ServiceFixture.path,
                                    interface: ServiceFixture.interfaceName, member: "Echo", arguments: [.uint32(2)]) == [.uint32(2)])

            let alone = try DBusCallConnection(directSocket: folder.path + "/native")
            let started = ContinuousClock.now
            do {
                _ = try Self.echo(alone, timeout: .seconds(20))
                Issue.record("a call the server turned away was answered")
            } catch {
                #expect(!error.isTimeout)
            }
            #expect(ContinuousClock.now - started < .seconds(10))
            #expect(!alone.isConnected)
        }
    }

    /// A reply far bigger than one read, and a call carrying a descriptor (libdbus's own
    /// transport, which negotiates passing them) on the same connection.
    @Test func bigRepliesAndDescriptorsOnTheDirectSocket() throws {
        let folder = try TemporaryDirectory(prefix: "kwpeer")
        chmod(folder.path, 0o700)
        let server = try Self.server(in: folder, seen: Seen())
        defer { server.stop() }
        let client = try DBusCallConnection(directSocket: folder.path + "/native")
        let big = (0..<700_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let reply = try Self.echo(client, [.bytes(big), .string("end")])
        #expect(reply.count == 6 && reply[4] == .bytes(big) && reply[5] == .string("end"))

        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let passed = try Self.echo(client, [.unixFD(fds[1])])
        let returned = try #require(passed.last?.unixFDValue)
        defer { close(returned) }
        var byte: UInt8 = 9
        #expect(write(returned, &byte, 1) == 1)
        var received: UInt8 = 0
        #expect(read(fds[0], &received, 1) == 1 && received == 9)
        // Calls without descriptors go on as before.
        #expect(try Self.echo(client, [.string("again")]).last == .string("again"))
        #expect(client.isDirect)
    }
}
