import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// The Secret Service's caps (ServiceLimits; docs/secret-service.md, "Limits") against the real
/// keywelld: linear work up to a cap, LimitsExceeded above it, long calls that stop when nobody
/// waits, and per-connection objects freed when the connection leaves.
@Suite(.serialized)
struct LimitsTests {
    static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"

    /// Item paths, each in a keychain of its own that does not exist.
    static func distinctCollectionPaths(_ count: Int) -> [String] {
        (0..<count).map { "\(SecretServiceFixture.root)/collection/k\($0)/\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))" }
    }

    func expectLimitsExceeded(mentioning cap: Int, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("no LimitsExceeded")
        } catch {
            let error = error as? DBusError
            #expect(error?.name == Self.limitsExceeded, "\(String(describing: error))")
            #expect(error?.message.contains("\(cap)") == true, "\(String(describing: error))")
        }
    }

    @Test func getSecretsOfAsManyDistinctCollectionsAsTheCapAnswersTheRealOnes() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession()
        let real = try fixture.createItem(["app": "limits"], secret: "kept", session: session)
        var paths = Self.distinctCollectionPaths(ServiceLimits.objectPathsPerCall - 1)
        paths.insert(real, at: paths.count / 2)
        let reply = try fixture.service("GetSecrets", [.objectPathArray(paths), .objectPath(session.path)])
        guard case .dictionary(_, _, let entries) = reply[0] else { throw TestSupportError("not a dictionary: \(reply)") }
        #expect(entries.count == 1)
        #expect(entries.first?.key.objectPathValue == real)
        #expect(try entries.first.map { try session.decode($0.value) } == "kept")
    }

    @Test func listsOverTheCapAreRefused() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession()
        let paths = DBusValue.objectPathArray(Self.distinctCollectionPaths(ServiceLimits.objectPathsPerCall + 1))
        expectLimitsExceeded(mentioning: ServiceLimits.objectPathsPerCall) {
            _ = try fixture.service("GetSecrets", [paths, .objectPath(session.path)])
        }
        expectLimitsExceeded(mentioning: ServiceLimits.objectPathsPerCall) { _ = try fixture.service("Unlock", [paths]) }
        expectLimitsExceeded(mentioning: ServiceLimits.objectPathsPerCall) { _ = try fixture.service("Lock", [paths]) }
        var attributes: [String: String] = [:]
        for index in 0...ServiceLimits.attributesPerItem { attributes["a\(index)"] = "v" }
        expectLimitsExceeded(mentioning: ServiceLimits.attributesPerItem) { _ = try fixture.search(attributes) }
        expectLimitsExceeded(mentioning: ServiceLimits.attributesPerItem) {
            _ = try fixture.call("\(SecretServiceFixture.root)/aliases/default", "Collection", "SearchItems", [.stringStringDict(attributes)])
        }
        expectLimitsExceeded(mentioning: ServiceLimits.attributesPerItem) {
            _ = try fixture.call("\(SecretServiceFixture.root)/aliases/default", "Collection", "CreateItem", [
                .stringVariantDict(["org.freedesktop.Secret.Item.Attributes": .stringStringDict(attributes)]),
                try session.encode("s"), .bool(false),
            ])
        }
        expectLimitsExceeded(mentioning: ServiceLimits.sessionKeyBytes) {
            _ = try fixture.service("OpenSession", [.string(SecretServiceFixture.dh),
                                                    .variant(.bytes([UInt8](repeating: 1, count: ServiceLimits.sessionKeyBytes + 1)))])
        }
        var properties: [String: DBusValue] = [:]
        for index in 0...ServiceLimits.propertiesPerCall { properties["p\(index)"] = .string("v") }
        expectLimitsExceeded(mentioning: ServiceLimits.propertiesPerCall) {
            _ = try fixture.service("CreateCollection", [.stringVariantDict(properties), .string("")])
        }
        // At the cap, a search is answered (nothing matches).
        attributes["a0"] = nil
        #expect(try fixture.search(attributes).unlocked.isEmpty)
        // Nothing was lost, and the daemon goes on.
        #expect(try fixture.search([:]).unlocked.isEmpty)
    }

    @Test func aLongCallPastItsDeadlineStopsAndTheDaemonGoesOn() throws {
        // A deadline of 0: GetSecrets gives up at its first check, which shows that it checks.
        let fixture = try SecretServiceFixture(environment: "KEYWELL_TEST_CALL_DEADLINE_MS=0")
        try fixture.createLogin()
        let session = try fixture.openSession()
        do {
            _ = try fixture.service("GetSecrets", [.objectPathArray(Self.distinctCollectionPaths(10)), .objectPath(session.path)])
            Issue.record("GetSecrets worked past its deadline")
        } catch {
            #expect(error.name == Self.limitsExceeded)
            #expect(error.message.contains("deadline"))
        }
        // Calls without long loops are served as ever.
        try fixture.client.ping(SecretServiceFixture.service)
        #expect(try fixture.service("ReadAlias", [.string("default")]) == [.objectPath("\(SecretServiceFixture.root)/collection/login")])
    }

    @Test func sessionsPerConnectionAreCappedAndFreedWhenTheConnectionLeaves() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let greedy = try fixture.bus.connect()
        var sessions: [ClientSession] = []
        for _ in 0..<ServiceLimits.sessionsPerConnection { sessions.append(try fixture.openSession(on: greedy)) }
        expectLimitsExceeded(mentioning: ServiceLimits.sessionsPerConnection) {
            _ = try fixture.service("OpenSession", [.string("plain"), .variant(.string(""))], on: greedy)
        }
        // Other connections are not held back.
        _ = try fixture.openSession(dh: true)
        // Closing one makes room for one.
        try fixture.call(sessions[0].path, "Session", "Close", [], on: greedy)
        _ = try fixture.openSession(on: greedy)
        expectLimitsExceeded(mentioning: ServiceLimits.sessionsPerConnection) {
            _ = try fixture.service("OpenSession", [.string("plain"), .variant(.string(""))], on: greedy)
        }
        let name = greedy.uniqueName!
        greedy.close()
        let line = "closed \(ServiceLimits.sessionsPerConnection) Secret Service session(s) of \(name)"
        let deadline = Date().addingTimeInterval(30)
        while !fixture.daemonLog.contains(line) && Date() < deadline { usleep(20_000) }
        #expect(fixture.daemonLog.contains(line))
    }

    @Test func promptsPerConnectionAreCapped() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        try fixture.native("Lock", [.string("login")])
        let login = "\(SecretServiceFixture.root)/collection/login"
        var prompts: [String] = []
        for _ in 0..<ServiceLimits.promptsPerConnection {
            prompts.append(try fixture.service("Unlock", [.objectPathArray([login])]).objectPath(at: 1))
        }
        #expect(Set(prompts).count == ServiceLimits.promptsPerConnection && !prompts.contains("/"))
        expectLimitsExceeded(mentioning: ServiceLimits.promptsPerConnection) {
            _ = try fixture.service("Unlock", [.objectPathArray([login])])
        }
        // A dismissed prompt is completed: room for a new one.
        let completed = SignalWaiter()
        let subscription = try fixture.client.addMatch(DBusMatchRule(path: prompts[0], interface: "org.freedesktop.Secret.Prompt",
                                                                     member: "Completed")) { completed.deliver($0) }
        defer { subscription.cancel() }
        try fixture.call(prompts[0], "Prompt", "Dismiss")
        #expect(completed.wait(timeout: 20) != nil)
        #expect(try fixture.service("Unlock", [.objectPathArray([login])]).objectPath(at: 1) != "/")
    }
}
