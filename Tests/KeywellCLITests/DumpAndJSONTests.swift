import Foundation
import Testing

/// dump-keychain and the --json output of find, dump, list-keychains and show-keychain-info.
@Suite struct DumpAndJSONTests {
    let session: CLISession
    init() throws { session = try SharedSessions.login() }

    private func json(_ result: CLIResult) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
    }

    @Test func dumpPrintsEveryItemAndDataWithDashD() throws {
        let keychain = try session.makeKeychain("dump")
        try session.ok(["add-generic-password", "-a", "a", "-s", "gsvc", "-w", "generic-secret", keychain])
        try session.ok(["add-internet-password", "-a", "b", "-s", "host.example", "-w", "inet-secret", keychain])
        let plain = try session.run(["dump-keychain", keychain])
        #expect(plain.exit == 0)
        #expect(plain.stdout.components(separatedBy: "keychain: \"\(session.path(of: keychain))\"\n").count == 3)
        #expect(plain.stdout.contains("class: \"genp\"") && plain.stdout.contains("class: \"inet\""))
        #expect(!plain.stdout.contains("generic-secret") && !plain.stdout.contains("data:"))

        let withData = try session.run(["dump-keychain", "-d", keychain])
        #expect(withData.stdout.contains("\"svce\"<blob>=\"gsvc\"\n    \"type\"<uint32>=<NULL>\ndata:\n\"generic-secret\"\n"))
        #expect(withData.stdout.contains("data:\n\"inet-secret\"\n"))
    }

    @Test func dumpOfALockedKeychainReportsEachItemAndExits0() throws {
        let keychain = try session.makeKeychain("dumplocked")
        try session.ok(["add-generic-password", "-a", "a", "-s", "s", "-w", "secret", keychain])
        try session.ok(["lock-keychain", keychain])
        // Attributes still print without -d.
        #expect(try session.run(["dump-keychain", keychain]).stdout.contains("\"svce\"<blob>=\"s\""))
        let result = try session.security(["dump-keychain", "-d", keychain])
        #expect(result.exit == 0)
        // Up to the attributes header, as `security` prints before fetching attributes and data.
        #expect(result.stdout == "keychain: \"\(session.path(of: keychain))\"\nversion: 512\nclass: \"genp\"\nattributes:\n")
        #expect(result.stderr == "security: SecKeychainItemCopyAttributesAndData: User interaction is not allowed.\n")
        // A keychain named on the command line that does not exist: the search fails, exit 1.
        #expect(try session.run(["dump-keychain", "no-such-keychain"]).exit == 1)
        #expect(try session.run(["dump-keychain", "-i", keychain]).exit == 2)
    }

    @Test func findJSONHasStableFieldsAndThePasswordOnlyWhenAsked() throws {
        let service = SharedSessions.unique("json")
        try session.ok(["add-generic-password", "-a", "alice", "-s", service, "-w", "pw", "-j", "note"])
        let withoutSecret = try #require(try json(session.run(["find-generic-password", "-s", service, "--json"])) as? [String: Any])
        #expect(withoutSecret["account"] as? String == "alice")
        #expect(withoutSecret["service"] as? String == service)
        #expect(withoutSecret["label"] as? String == service)
        #expect(withoutSecret["comment"] as? String == "note")
        #expect(withoutSecret["class"] as? String == "genp")
        #expect(withoutSecret["keychain"] as? String == session.path(of: "login"))
        #expect(withoutSecret["generic"] is NSNull)
        #expect((withoutSecret["created"] as? String)?.hasSuffix("Z") == true)
        #expect(withoutSecret["password"] == nil)
        let withSecret = try #require(try json(session.run(["find-generic-password", "-s", service, "-w", "--json"])) as? [String: Any])
        #expect(withSecret["password"] as? String == "pw")
        // --json after the keychain operands works too.
        let trailing = try session.run(["find-generic-password", "-s", service, "login", "--json"])
        #expect(trailing.exit == 0)
        #expect(try json(trailing) is [String: Any])

        let server = SharedSessions.unique("json.example")
        try session.ok(["add-internet-password", "-a", "a", "-s", server, "-r", "htps", "-P", "8443", "-X", "ff00"])
        let inet = try #require(try json(session.run(["find-internet-password", "-s", server, "-g", "--json"])) as? [String: Any])
        #expect(inet["server"] as? String == server)
        #expect(inet["protocol"] as? String == "htps")
        #expect(inet["port"] as? Int == 8443)
        #expect(inet["authenticationType"] as? String == "dflt")
        #expect((inet["password"] as? [String: String])?["hex"] == "ff00")
    }

    @Test func keychainJSON() throws {
        let list = try #require(try json(session.run(["list-keychains", "--json"])) as? [[String: String]])
        #expect(list.first?["name"] == "login")
        #expect(list.first?["path"] == session.path(of: "login"))

        let keychain = try session.makeKeychain("info")
        try session.ok(["add-generic-password", "-a", "a", "-s", "s", keychain])
        try session.ok(["lock-keychain", keychain])
        // JSON describes a locked keychain too.
        let info = try #require(try json(session.run(["show-keychain-info", "--json", keychain])) as? [String: Any])
        #expect(info["name"] as? String == keychain)
        #expect(info["locked"] as? Bool == true)
        #expect(info["itemCount"] as? Int == 1)
        #expect(info["lockOnSleep"] as? Bool == true)
        #expect(info["lockAfterSeconds"] as? Int == 300)
        #expect(info["isDefault"] as? Bool == false)
        let login = try #require(try json(session.run(["show-keychain-info", "--json", "login"])) as? [String: Any])
        #expect(login["lockAfterSeconds"] is NSNull)
        #expect(login["isLogin"] as? Bool == true)

        try session.ok(["unlock-keychain", "-p", "pw", keychain])
        let dump = try #require(try json(session.run(["dump-keychain", "-d", "--json", keychain])) as? [[String: Any]])
        #expect(dump.count == 1)
        #expect(dump.first?["password"] as? String == "")
    }
}
