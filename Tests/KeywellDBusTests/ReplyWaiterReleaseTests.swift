import Foundation
import KeywellTestSupport
import Testing

@testable import KeywellDBus

@Suite("Reply waiters are released once answered")
struct ReplyWaiterReleaseTests {
    /// keywelld asks the bus two questions about every new caller (pid, credentials). Each
    /// answered call used to keep its waiter, libdbus pending call and messages for good (about
    /// 4.7 KiB per caller process, docs/dbus-layer.md "Calls and their waiters"): none may stay.
    @Test func answeredCallsLeaveNoWaiterBehind() async throws {
        let fixture = try ServiceFixture()
        let calls = 300
        for index in 0..<calls {
            let echoed = try fixture.client.call(destination: ServiceFixture.name, path: ServiceFixture.path,
                                                 interface: ServiceFixture.interfaceName, member: "Echo",
                                                 arguments: [.int32(Int32(index))])
            #expect(echoed == [.int32(Int32(index))])
        }
        // Asynchronous calls release theirs as well, and so do calls the bus answers with an error.
        for index in 0..<calls {
            let echoed = try await fixture.client.callAsync(destination: ServiceFixture.name, path: ServiceFixture.path,
                                                            interface: ServiceFixture.interfaceName, member: "Echo",
                                                            arguments: [.int32(Int32(index))])
            #expect(echoed == [.int32(Int32(index))])
            #expect(throws: DBusError.self) {
                try fixture.client.call(destination: ServiceFixture.name, path: "/no/such/object",
                                        interface: ServiceFixture.interfaceName, member: "Echo")
            }
        }
        // libdbus drops its own reference just after the caller got its answer: wait for the
        // count to settle (hang guard only), then check it.
        let settled = await eventually(within: .seconds(60)) { fixture.client.liveReplyWaiters == 0 }
        #expect(settled, "\(fixture.client.liveReplyWaiters) of \(3 * calls) reply waiters still in memory")
    }

    /// A call sent now and answered later (`startCall`, how keywelld asks the bus about a new
    /// caller while it works): the reply is the call's, taken once, and nothing stays behind,
    /// neither for calls whose replies were taken nor for calls dropped unanswered (cancelled).
    @Test func callsInFlightAnswerOnceAndLeaveNothingBehind() async throws {
        let fixture = try ServiceFixture()
        let calls = 100
        var inFlight: [DBusCallInFlight] = []
        for index in 0..<calls {
            inFlight.append(try fixture.client.startCall(destination: ServiceFixture.name, path: ServiceFixture.path,
                                                         interface: ServiceFixture.interfaceName, member: "Echo",
                                                         arguments: [.int32(Int32(index))]))
        }
        // Taken in the reverse order: each reply is its own call's, whatever arrived first.
        for (index, call) in inFlight.enumerated().reversed() where index % 2 == 0 {
            #expect(try call.reply() == [.int32(Int32(index))])
            #expect(throws: DBusError.self) { try call.reply() }
        }
        // The other half are dropped without their replies being taken.
        inFlight.removeAll()
        // An error reply comes back as the error it is.
        do {
            let failing = try fixture.client.startCall(destination: ServiceFixture.name, path: ServiceFixture.path,
                                                       interface: ServiceFixture.interfaceName, member: "Fail",
                                                       arguments: [.string("org.keywell.Test.Error.Nope"), .string("nope")])
            #expect { try failing.reply() } throws: { ($0 as? DBusError)?.name == "org.keywell.Test.Error.Nope" }
        }
        let settled = await eventually(within: .seconds(60)) { fixture.client.liveReplyWaiters == 0 }
        #expect(settled, "\(fixture.client.liveReplyWaiters) reply waiters still in memory")
    }

    private func eventually(within limit: Duration, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: limit)
        while !condition() {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }
}
