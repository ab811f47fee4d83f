import Foundation
import KeywellDBus
import KeywellTestSupport
import Testing

/// What a serving connection bounds: values decoded per call, a call's deadline, and calls whose
/// caller left the bus (docs/secret-service.md, "Limits").
@Suite("Call limits and abandoned calls", .serialized)
struct CallLimitsTests {
    @Test func argumentsDecodingToTooManyValuesAreRefusedBeforeTheHandler() throws {
        let fixture = try ServiceFixture()
        fixture.server.maximumDecodedValuesPerCall = 1000
        // The array is one value, each element another.
        let fits = DBusValue.stringArray((0..<999).map { "s\($0)" })
        #expect(try fixture.call("Echo", [fits]) == [fits])
        do {
            _ = try fixture.call("Echo", [.stringArray((0..<1000).map { "s\($0)" })])
            Issue.record("1,001 values were decoded")
        } catch {
            #expect(error.name == DBusError.Name.limitsExceeded)
            #expect(error.message.contains("1000"))
        }
        // Fixed-size elements count one each too (they decode to a value each); a byte array is one value.
        do {
            _ = try fixture.call("Echo", [.array(elementSignature: .int32, (0..<5000).map { DBusValue.int32(Int32($0)) })])
            Issue.record("5,001 values were decoded")
        } catch {
            #expect(error.name == DBusError.Name.limitsExceeded)
        }
        let bytes = DBusValue.bytes([UInt8](repeating: 7, count: 100_000))
        #expect(try fixture.call("Echo", [bytes]) == [bytes])
        // The service goes on.
        #expect(try fixture.call("Echo", [.string("after")]) == [.string("after")])
    }

    @Test func aCallPastItsDeadlineStopsWithLimitsExceeded() throws {
        let fixture = try ServiceFixture()
        fixture.server.callDeadline = .milliseconds(0)
        let before = fixture.server.abandonedCallCount
        do {
            _ = try fixture.call("WorkUntilAbandoned")
            Issue.record("the call was answered as if wanted")
        } catch {
            #expect(error.name == DBusError.Name.limitsExceeded)
            #expect(error.message.contains("deadline"))
        }
        #expect(fixture.server.abandonedCallCount == before + 1)
    }

    /// A service that watches its callers leave, one caller of it, and the counts of abandoned
    /// calls before that caller does anything.
    private func callerWatchedLeaving() throws -> (fixture: ServiceFixture, caller: DBusConnection, before: Int, abandonedBefore: Int) {
        let fixture = try ServiceFixture()
        try fixture.server.watchCallersLeaving()
        return (fixture, try fixture.bus.connect(), fixture.server.abandonedCallCount, ServiceFixture.abandonedBy.value.count)
    }

    @Test func aCallerLeavingTheBusMakesItsLongCallStop() throws {
        let (fixture, caller, before, abandonedBefore) = try callerWatchedLeaving()
        try caller.callWithoutReply(destination: ServiceFixture.name, path: ServiceFixture.path,
                                    interface: ServiceFixture.interfaceName, member: "WorkUntilAbandoned")
        // close() sends the call first: the bus delivers it before the caller's departure.
        caller.close()
        // Positive signal: the handler noticed (the hang guard is a minute away). The count goes
        // up inside checkStillWanted, before the handler records its message: wait for both.
        #expect(eventually(timeout: .seconds(30)) {
            fixture.server.abandonedCallCount == before + 1 && ServiceFixture.abandonedBy.value.count > abandonedBefore
        })
        let messages = ServiceFixture.abandonedBy.value.dropFirst(abandonedBefore)
        #expect(messages.count == 1)
        #expect(messages.first?.contains("caller left the bus") == true)
    }

    /// The table of calls in flight holds its calls unretained: calls dropped without a reply
    /// leave it as they go, so the caller's departure afterwards marks only its call still
    /// running (a dropped call left behind would be touched after it was freed).
    @Test func callsDroppedWithoutAReplyLeaveTheTableBeforeTheirCallerLeaves() throws {
        let (fixture, caller, before, abandonedBefore) = try callerWatchedLeaving()
        for _ in 0..<50 {
            do {
                _ = try caller.call(destination: ServiceFixture.name, path: ServiceFixture.path,
                                    interface: ServiceFixture.interfaceName, member: "Forget", timeout: .seconds(5))
                Issue.record("expected the layer's Failed answer")
            } catch {
                #expect(error.name == DBusError.Name.failed)
            }
        }
        try caller.callWithoutReply(destination: ServiceFixture.name, path: ServiceFixture.path,
                                    interface: ServiceFixture.interfaceName, member: "WorkUntilAbandoned")
        caller.close()
        #expect(eventually(timeout: .seconds(30)) {
            fixture.server.abandonedCallCount == before + 1 && ServiceFixture.abandonedBy.value.count > abandonedBefore
        })
        #expect(ServiceFixture.abandonedBy.value.dropFirst(abandonedBefore).first?.contains("caller left the bus") == true)
    }
}
