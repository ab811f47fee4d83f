import Foundation
import KeywellTestSupport
import Testing

@testable import KeywellDBus

/// `DBusCallConnection`, the thread-less connection short-lived clients call through, against a
/// real dbus-daemon and the test service.
@Suite("Call-only connections")
struct CallConnectionTests {
    let fixture: ServiceFixture
    let caller: DBusCallConnection
    init() throws {
        fixture = try ServiceFixture()
        caller = try DBusCallConnection(address: fixture.bus.address)
    }

    private func call(_ member: String, _ arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) throws(DBusError) -> [DBusValue] {
        try caller.call(destination: ServiceFixture.name, path: ServiceFixture.path, interface: ServiceFixture.interfaceName,
                        member: member, arguments: arguments, timeout: timeout)
    }

    @Test func repliesComeBackWhole() throws {
        let arguments: [DBusValue] = [.string("a"), .bytes([0, 1, 2, 255]), .stringVariantDict(["k": .int64(-7)])]
        #expect(try call("Echo", arguments) == arguments)
        // The peer interface, answered by libdbus in the service.
        #expect(try caller.call(destination: ServiceFixture.name, path: "/", interface: StandardInterface.peer, member: "Ping").isEmpty)
        #expect(caller.isConnected)
    }

    @Test func errorRepliesKeepTheirNameAndMessage() throws {
        do {
            _ = try call("Fail", [.string("org.keywell.Keychain1.Error.ItemNotFound"), .string("-25300: not found")])
            Issue.record("expected an error")
        } catch {
            #expect(error.name == "org.keywell.Keychain1.Error.ItemNotFound")
            #expect(error.message == "-25300: not found")
        }
        do {
            _ = try caller.call(destination: "org.keywell.Nobody", path: "/", interface: nil, member: "Ping", autoStart: false)
            Issue.record("expected an error")
        } catch {
            #expect(error.name == DBusError.Name.nameHasNoOwner || error.name == DBusError.Name.serviceUnknown)
        }
    }

    @Test func aCallWithoutReplyTimesOutAsNoReply() throws {
        // The handler cannot reply before its gate opens, so the call can only end by its timeout.
        let gate = UUID().uuidString
        defer { HandlerGates.shared.open(gate) }
        do {
            _ = try call("Hold", [.string(gate)], timeout: .milliseconds(200))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.isTimeout)
        }
        HandlerGates.shared.open(gate)
        #expect(try call("Echo", [.string("after")]) == [.string("after")])
    }

    @Test func threadsTakeTurnsAndEachGetsItsOwnReply() throws {
        // libdbus can leave one of several threads waiting at once without the reply another
        // thread read for it, until its timeout (25 s here): the connection lets one wait at a time.
        let count = 8
        let replies = LockedValue<[Int32]>([])
        let group = DispatchGroup()
        for index in 0..<Int32(count) {
            group.enter()
            Thread {
                defer { group.leave() }
                for round in 0..<Int32(20) {
                    guard case .int32(let value)? = try? call("Echo", [.int32(index * 100 + round)]).first else { return }
                    replies.mutate { $0.append(value) }
                }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        var expected: [Int32] = []
        for index in 0..<Int32(count) {
            for round in 0..<Int32(20) { expected.append(index * 100 + round) }
        }
        #expect(replies.value.sorted() == expected)
    }

    @Test func helloTravelsWithTheFirstCallAndTheBusKnowsTheName() throws {
        let fresh = try DBusCallConnection(address: fixture.bus.address)
        #expect(fresh.uniqueName == nil, "Hello's answer is read with the first call's")
        #expect(try fresh.call(destination: ServiceFixture.name, path: ServiceFixture.path, interface: ServiceFixture.interfaceName,
                               member: "Echo", arguments: [.string("first")]) == [.string("first")])
        let name = try #require(fresh.uniqueName)
        #expect(name.hasPrefix(":"))
        // The bus registered exactly this connection under that name: it is ours.
        let pid = try fresh.call(destination: StandardInterface.busName, path: StandardInterface.busPath,
                                 interface: StandardInterface.bus, member: "GetConnectionUnixProcessID", arguments: [.string(name)])
        #expect(pid == [.uint32(UInt32(getpid()))])
    }

    /// Whether descriptors may pass is known only once authentication is over: a first call
    /// carrying one must wait for Hello's answer instead of being refused (it was, once).
    @Test func aFirstCallCarryingADescriptorPassesIt() throws {
        let fresh = try DBusCallConnection(address: fixture.bus.address)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let reply = try fresh.call(destination: ServiceFixture.name, path: ServiceFixture.path, interface: ServiceFixture.interfaceName,
                                   member: "Echo", arguments: [.unixFD(fds[1])])
        let returned = try #require(reply.first?.unixFDValue)
        defer { close(returned) }
        var byte: UInt8 = 7
        #expect(write(returned, &byte, 1) == 1)
        var received: UInt8 = 0
        #expect(read(fds[0], &received, 1) == 1)
        #expect(received == 7)
    }

    @Test func aLostBusFailsCallsAndSaysSo() throws {
        let bus = try PrivateSessionBus()
        let connection = try DBusCallConnection(address: bus.address)
        #expect(connection.isConnected)
        bus.stop()
        #expect(throws: DBusError.self) {
            _ = try connection.call(destination: StandardInterface.busName, path: StandardInterface.busPath,
                                    interface: StandardInterface.bus, member: "GetId", timeout: .seconds(5))
        }
        #expect(!connection.isConnected)
    }

    @Test func noBusIsAClearError() {
        #expect(throws: DBusError.self) { _ = try DBusCallConnection(address: "unix:path=/nonexistent/keywell-test-bus") }
        #expect(throws: DBusError.self) { _ = try DBusCallConnection(address: "unix:path=/a\0b") }
    }

    @Test func timeoutsBecomeWholeMilliseconds() {
        #expect(DBusCallConnection.milliseconds(.seconds(30)) == 30_000)
        #expect(DBusCallConnection.milliseconds(.milliseconds(200)) == 200)
        #expect(DBusCallConnection.milliseconds(.microseconds(1500)) == 1)
        #expect(DBusCallConnection.milliseconds(.seconds(-1)) == 0)
        #expect(DBusCallConnection.milliseconds(.seconds(Int64.max / 2)) == Int32.max)
    }
}
