import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// Calls a hostile or broken client could send, in batches, against the real daemon: after every
/// batch the same daemon process must still answer an ordinary call. (MalformedCallTests checks
/// the exact errors of common mistakes; this sweeps every method and the Secret Service's paths.)
@Suite struct HostileCallTests {
    /// `depth` variants inside each other around a string.
    static func nestedVariant(_ depth: Int) -> DBusValue {
        (0..<depth).reduce(DBusValue.string("core")) { inner, _ in .variant(inner) }
    }

    /// Sends `arguments` to `member`; any reply or error is fine, a lost daemon is not. Values
    /// the client library itself refuses to encode (past the wire's limits) are skipped.
    static func send(_ fixture: DaemonFixture, destination: String = KeywellNames.busName, path: String = KeywellNames.objectPath,
                     interface: String = KeywellNames.interface, _ member: String, _ arguments: [DBusValue]) {
        do {
            _ = try fixture.client.call(destination: destination, path: path, interface: interface, member: member,
                                        arguments: arguments, timeout: .seconds(60))
        } catch {
            #expect(!error.isTimeout && error.name != DBusError.Name.disconnected, "\(member) got no reply: \(error)")
        }
    }

    static func expectStillServing(_ fixture: DaemonFixture, _ pid: pid_t, after batch: String) throws {
        #expect(try fixture.info("login")["locked"] == false, "no answer after \(batch)")
        #expect(try fixture.daemonPID() == pid, "the daemon was replaced after \(batch)")
    }

    @Test func everyNativeMethodWithWrongArgumentsKeepsTheDaemonServing() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        let pid = try fixture.daemonPID()
        let interface = try #require(try DBusInterface.parse(introspectionXML: String(
            contentsOfFile: IntrospectionTests.interfaceXMLPath, encoding: .utf8)).first)
        let wrongArgumentLists: [(String, [DBusValue])] = [
            ("nothing", []),
            ("a number", [.uint32(7)]),
            ("two strings", ["login", "login"]),
            ("a structure", [.structure([.int64(-1), .double(.nan), .objectPath("/x")])]),
            ("a deep variant", [Self.nestedVariant(48)]),
            ("a{ss}", [.stringStringDict(["class": "genp"])]),
            ("a dictionary of variants of dictionaries", [.stringVariantDict(["class": .stringVariantDict(["x": .stringVariantDict([:])])])]),
            ("an empty array of arrays", [.array(elementSignature: "aai", [])]),
        ]
        for method in interface.methods where method.name != "LockAll" {
            for (what, arguments) in wrongArgumentLists {
                Self.send(fixture, method.name, arguments)
                _ = what
            }
            try Self.expectStillServing(fixture, pid, after: "wrong arguments to \(method.name)")
        }
    }

    @Test func deepVariantsAsFarAsLibdbusAllows() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        let pid = try fixture.daemonPID()
        for depth in [16, 32, 48, 60, 62, 63, 64, 65] {
            Self.send(fixture, "Add", [.stringVariantDict(["class": "genp", "acct": Self.nestedVariant(depth)])])
            Self.send(fixture, "CopyMatching", [.stringVariantDict(["class": "genp", "labl": Self.nestedVariant(depth)])])
            Self.send(fixture, "SetSearchList", [Self.nestedVariant(depth)])
            // Arrays of variants of arrays: the other way to nest.
            let nestedArrays = (0..<(depth / 2)).reduce(DBusValue.string("x")) { inner, _ in
                .array(elementSignature: .variant, [.variant(inner)])
            }
            Self.send(fixture, "Add", [.stringVariantDict(["class": "genp", "gena": nestedArrays])])
        }
        try Self.expectStillServing(fixture, pid, after: "deep variants")
    }

    @Test func hugeArraysOnEveryArrayArgument() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        let pid = try fixture.daemonPID()
        let million = DBusValue.array(elementSignature: .string, (0..<1_000_000).map { .string("k\($0)") })
        let manyDictionaries = DBusValue.array(elementSignature: "a{sv}", (0..<50_000).map { _ in .stringVariantDict(["class": "genp"]) })
        Self.send(fixture, "SetSearchList", [million])
        Self.send(fixture, "Add", [manyDictionaries])
        Self.send(fixture, "Update", [.stringVariantDict(["class": "genp"]), .stringVariantDict(["m_SearchList": million])])
        Self.send(fixture, "Unlock", ["login", .bytes([UInt8](repeating: 0x41, count: 32 << 20))])
        try Self.expectStillServing(fixture, pid, after: "huge arrays")
    }

    @Test func secretServiceNonsensePathsAndCalls() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        let pid = try fixture.daemonPID()
        let secrets = "org.freedesktop.secrets"
        let paths = [
            "/org/freedesktop/secrets/collection/nope", "/org/freedesktop/secrets/collection/login/999999",
            "/org/freedesktop/secrets/collection/login/not_a_number", "/org/freedesktop/secrets/session/s999",
            "/org/freedesktop/secrets/aliases/nothing", "/org/freedesktop/secrets/prompt/p1",
            "/org/freedesktop/secrets/collection/" + String(repeating: "a", count: 4000), "/",
            "/org/freedesktop/secrets/collection",
        ]
        let calls: [(String, String, [DBusValue])] = [
            ("org.freedesktop.DBus.Properties", "GetAll", ["org.freedesktop.Secret.Item"]),
            ("org.freedesktop.DBus.Properties", "Get", ["org.freedesktop.Secret.Collection", "Items"]),
            ("org.freedesktop.DBus.Properties", "Set", ["org.freedesktop.Secret.Item", "Label", .variant(.uint32(1))]),
            ("org.freedesktop.Secret.Item", "GetSecret", [.objectPath("/org/freedesktop/secrets/session/nope")]),
            ("org.freedesktop.Secret.Item", "Delete", []),
            ("org.freedesktop.Secret.Collection", "SearchItems", [.stringStringDict(["a": "b"])]),
            ("org.freedesktop.Secret.Collection", "CreateItem", ["wrong", "types", true]),
            ("org.freedesktop.Secret.Session", "Close", []),
            ("org.freedesktop.Secret.Prompt", "Prompt", [.uint32(0)]),
            ("org.freedesktop.DBus.Introspectable", "Introspect", []),
        ]
        for path in paths {
            for (interface, member, arguments) in calls {
                Self.send(fixture, destination: secrets, path: path, interface: interface, member, arguments)
            }
        }
        let service = "/org/freedesktop/secrets"
        let serviceCalls: [(String, [DBusValue])] = [
            ("OpenSession", [.uint32(1)]),
            ("OpenSession", ["dh-ietf1024-sha256-aes128-cbc-pkcs7", .variant(.bytes([UInt8](repeating: 0xFF, count: 100_000)))]),
            ("OpenSession", ["dh-ietf1024-sha256-aes128-cbc-pkcs7", .variant(.bytes([]))]),
            ("OpenSession", ["no-such-algorithm", .variant("")]),
            ("SearchItems", [.stringStringDict(Dictionary(uniqueKeysWithValues: (0..<100_000).map { ("k\($0)", "v") }))]),
            ("Unlock", [.array(elementSignature: .objectPath, (0..<10_000).map { .objectPath("/x/\($0)") })]),
            ("GetSecrets", [.array(elementSignature: .objectPath, [.objectPath("/")]), .objectPath("/")]),
            ("ReadAlias", [.string(String(repeating: "x", count: 100_000))]),
            ("SetAlias", ["default", .objectPath("/org/freedesktop/secrets/collection/nope")]),
            ("CreateCollection", [.stringVariantDict(["org.freedesktop.Secret.Collection.Label": Self.nestedVariant(40)]), ""]),
            ("NoSuchMethod", []),
        ]
        for (member, arguments) in serviceCalls {
            Self.send(fixture, destination: secrets, path: service, interface: "org.freedesktop.Secret.Service", member, arguments)
        }
        try Self.expectStillServing(fixture, pid, after: "Secret Service nonsense")
        // And the Secret Service itself still answers.
        let opened = try fixture.client.call(destination: secrets, path: service, interface: "org.freedesktop.Secret.Service",
                                             member: "OpenSession", arguments: ["plain", .variant("")])
        #expect(opened.count == 2)
    }
}
