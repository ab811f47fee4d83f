import KeywellDBus
import Testing

/// A call built ahead of its sending and its reply read after (keywell-bench times the round
/// trip between the two): the same checks and answers as `call`, through a real bus.
@Suite("Prepared calls")
struct PreparedCallTests {
    let fixture: ServiceFixture
    init() throws { fixture = try ServiceFixture() }

    func prepare(_ member: String, _ arguments: [DBusValue] = []) throws -> DBusPreparedCall {
        try fixture.client.prepareCall(destination: ServiceFixture.name, path: ServiceFixture.path,
                                       interface: ServiceFixture.interfaceName, member: member, arguments: arguments)
    }

    @Test func aPreparedCallIsAnsweredAsACallIs() throws {
        let values: [DBusValue] = [.string("é"), .objectPathArray(["/a", "/a/b"]), .bytes([0, 255])]
        let prepared = try prepare("Echo", values)
        let reply = try fixture.client.send(prepared)
        #expect(try reply.arguments() == values)
        #expect(try reply.arguments() == fixture.call("Echo", values))
    }

    @Test func aPreparedPingIsAnswered() throws {
        let reply = try fixture.client.send(try fixture.client.preparePing(ServiceFixture.name))
        #expect(try reply.arguments() == [])
    }

    @Test func anErrorReplyThrowsWhenRead() throws {
        let reply = try fixture.client.send(try prepare("Fail", [.string("org.keywell.Test.Error.Nope"), .string("no")]))
        #expect(throws: DBusError(name: "org.keywell.Test.Error.Nope", message: "no")) { try reply.arguments() }
    }

    @Test func aPreparedCallIsSentOnce() throws {
        let prepared = try prepare("Echo", [.string("once")])
        _ = try fixture.client.send(prepared)
        do {
            _ = try fixture.client.send(prepared)
            Issue.record("a second send of one prepared call went out")
        } catch {
            #expect(error.name == DBusError.Name.failed)
        }
        // The connection is unharmed: the next call is answered.
        #expect(try fixture.call("Echo", [.string("after")]) == [.string("after")])
    }

    @Test func namesAreCheckedWhenTheCallIsBuilt() {
        #expect(throws: DBusError.self) {
            try fixture.client.prepareCall(destination: ServiceFixture.name, path: "not/a/path",
                                           interface: ServiceFixture.interfaceName, member: "Echo")
        }
    }
}
