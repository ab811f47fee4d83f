import Foundation
import KeywellTestSupport
import Testing

/// `-T`/`-A` on the add commands, `dump-keychain -a` (macOS's layout, byte for byte), its JSON,
/// and `set-keychain-settings --enforce-access` (docs/access-control.md, "Access lists on items").
@Suite struct AccessListCommandTests {
    let session: CLISession
    init() throws { session = try SharedSessions.login() }

    /// What `-T path` must store, worked out apart from Keywell's code.
    private func identity(_ path: String) throws -> String {
        try ExpectedProgramIdentity.of(path)
    }

    private func accessBlock(label: String, _ applications: String) -> String {
        "access: 1 entries\n    entry 0:\n        authorizations (1): decrypt\n        don't-require-password\n"
            + "        description: \(label)\n" + applications
    }

    /// One item in a keychain of its own, dumped with -a -d: the text after its attributes.
    /// `withData` false: without -d, from the access block on (keywell reading the secret of an
    /// item whose list does not trust it would be asked about, and here denied: no dialog).
    private func dumpTail(_ options: [String], withData: Bool = true) throws -> String {
        let keychain = try session.makeKeychain("acl")
        try session.ok(["add-generic-password", "-a", "acct", "-s", "svc", "-l", "My label", "-w", "s3cret"] + options + [keychain])
        let dump = try session.ok(["dump-keychain", "-a"] + (withData ? ["-d"] : []) + [keychain])
        let marker = withData ? "data:\n" : "access:"
        let start = try #require(dump.stdout.range(of: marker))
        return String(dump.stdout[start.lowerBound...])
    }

    @Test func dashTTwiceTrustsBothProgramsInOrder() throws {
        // /bin/sh is a symlink: the identity names the program it resolves to.
        let first = try identity("/usr/bin/env"), second = try identity("/bin/sh")
        #expect(!second.hasPrefix("exe:/bin/sh;"))
        let tail = try dumpTail(["-T", "/usr/bin/env", "-T", "/bin/sh"], withData: false)
        #expect(tail == accessBlock(label: "My label", """
                    applications (2):
                        0: \(first)
                        1: \(second)

            """))
    }

    @Test func dashTEmptyTrustsNone() throws {
        #expect(try dumpTail(["-T", ""], withData: false) == accessBlock(label: "My label", "        applications (0):\n"))
    }

    @Test func dashATrustsAnyApplication() throws {
        #expect(try dumpTail(["-A"]) == "data:\n\"s3cret\"\n" + accessBlock(label: "My label", "        applications: <null>\n"))
        // -A wins over -T, as on macOS.
        #expect(try dumpTail(["-A", "-T", "/usr/bin/env"]) == "data:\n\"s3cret\"\n" + accessBlock(label: "My label", "        applications: <null>\n"))
    }

    @Test func withoutOptionsTheCreatorAlone() throws {
        // keywell made it, so keywell is on its list and reads it (-d) without a question.
        #expect(try dumpTail([]) == "data:\n\"s3cret\"\n"
            + accessBlock(label: "My label", "        applications (1):\n            0: \(try identity(session.keywell))\n"))
    }

    @Test func withoutDashDTheBlockFollowsTheAttributesAndInternetItemsHaveItToo() throws {
        let keychain = try session.makeKeychain("acl")
        try session.ok(["add-internet-password", "-a", "me", "-s", "host.example", "-w", "pw", "-T", "/usr/bin/env", keychain])
        let dump = try session.ok(["dump-keychain", "-a", keychain])
        let expected = accessBlock(label: "host.example", "        applications (1):\n            0: \(try identity("/usr/bin/env"))\n")
        #expect(dump.stdout.hasSuffix("\"srvr\"<blob>=\"host.example\"\n    \"type\"<uint32>=<NULL>\n" + expected), "\(dump.stdout)")
        // Without -a there is no block.
        #expect(!(try session.ok(["dump-keychain", keychain]).stdout.contains("access:")))
    }

    @Test func aMissingProgramIsAnErrorAndAddsNothing() throws {
        let keychain = try session.makeKeychain("acl")
        let result = try session.run(["add-generic-password", "-a", "a", "-s", "s", "-w", "pw", "-T", "/no/such/program", keychain])
        #expect(result.exit == 1)
        #expect(result.stderr.contains("/no/such/program: No such file or directory"), "\(result)")
        #expect(try session.run(["find-generic-password", "-a", "a", "-s", "s", keychain]).exit == 44)
    }

    @Test func dashUReplacesTheListOnlyWhenGiven() throws {
        let keychain = try session.makeKeychain("acl")
        let keywell = try identity(session.keywell)
        try session.ok(["add-generic-password", "-a", "a", "-s", "s", "-w", "pw", "-T", session.keywell, keychain])
        try session.ok(["add-generic-password", "-U", "-a", "a", "-s", "s", "-w", "pw2", keychain])
        #expect(try session.ok(["dump-keychain", "-a", keychain]).stdout.hasSuffix("        applications (1):\n            0: \(keywell)\n"))
        try session.ok(["add-generic-password", "-U", "-a", "a", "-s", "s", "-w", "pw3", "-A", keychain])
        #expect(try session.ok(["dump-keychain", "-a", keychain]).stdout.hasSuffix("        applications: <null>\n"))
    }

    @Test func anItemThatDoesNotTrustKeywellIsNotChangedUnasked() throws {
        let keychain = try session.makeKeychain("acl")
        try session.ok(["add-generic-password", "-a", "a", "-s", "s", "-w", "pw", "-T", "", keychain])
        // No dialog can be shown in this session: the question is answered Deny (errSecAuthFailed).
        let update = try session.run(["add-generic-password", "-U", "-a", "a", "-s", "s", "-w", "pw2", "-A", keychain])
        #expect(update.exit == 51, "\(update)")
        #expect(try session.ok(["dump-keychain", "-a", keychain]).stdout.hasSuffix("        applications (0):\n"))
        #expect(try session.run(["find-generic-password", "-a", "a", "-s", "s", "-w", keychain]).exit == 51)
    }

    @Test func aDenialIsHintedOnATerminalAndNotThroughAPipe() throws {
        let keychain = try session.makeKeychain("acl")
        try session.ok(["add-generic-password", "-a", "a", "-s", "s", "-w", "pw", "-T", "", keychain])
        // Through a pipe: exactly macOS's line, no hint.
        let piped = try session.run(["find-generic-password", "-a", "a", "-s", "s", "-w", keychain])
        #expect(piped.exit == 51)
        #expect(piped.stderr == "security: SecKeychainSearchCopyNext: The user name or passphrase you entered is not correct.\n"
            .replacing("security:", with: "keywell:"))
        #expect(piped.stdout.isEmpty)
        // On a terminal: one more line, saying it was denied; none with -q.
        let terminal = try PseudoTerminalRun(session, ["find-generic-password", "-a", "a", "-s", "s", "-w", keychain])
        try terminal.waitFor("The user name or passphrase you entered is not correct.")
        try terminal.waitFor("keywell: access denied: ")
        #expect(try terminal.finish().exitCode == 51)
        let quiet = try PseudoTerminalRun(session, ["-q", "find-generic-password", "-a", "a", "-s", "s", "-w", keychain])
        _ = try quiet.finish()
        #expect(!quiet.text.contains("denied"), "\(quiet.text.debugDescription)")
    }

    @Test func dumpJSONCarriesTheList() throws {
        let keychain = try session.makeKeychain("acl")
        try session.ok(["add-generic-password", "-a", "listed", "-s", "s", "-w", "pw", "-T", "/usr/bin/env", keychain])
        try session.ok(["add-generic-password", "-a", "none", "-s", "s", "-w", "pw", "-T", "", keychain])
        try session.ok(["add-generic-password", "-a", "any", "-s", "s", "-w", "pw", "-A", keychain])
        let items = try #require(try JSONSerialization.jsonObject(
            with: Data(session.ok(["dump-keychain", "-a", keychain, "--json"]).stdout.utf8)) as? [[String: Any]])
        var byAccount: [String: Any] = [:]
        for item in items { byAccount[item["account"] as! String] = item["access"] }
        #expect(byAccount["listed"] as? [String] == [try identity("/usr/bin/env")])
        #expect(byAccount["none"] as? [String] == [])
        #expect(byAccount["any"] as? String == "any")
        let plain = try #require(try JSONSerialization.jsonObject(
            with: Data(session.ok(["dump-keychain", keychain, "--json"]).stdout.utf8)) as? [[String: Any]])
        #expect(plain.allSatisfy { $0["access"] == nil })
    }

    @Test func enforceAccessChangesOnlyThatSetting() throws {
        let keychain = try session.makeKeychain("acl")
        func info() throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(
                with: Data(session.ok(["show-keychain-info", keychain, "--json"]).stdout.utf8)) as? [String: Any])
        }
        #expect(try info()["enforceAccess"] as? Bool == true)
        try session.ok(["set-keychain-settings", "-t", "60", keychain])
        try session.ok(["set-keychain-settings", "--enforce-access", "off", keychain])
        #expect(try info()["enforceAccess"] as? Bool == false)
        #expect(try info()["lockAfterSeconds"] as? Int == 60)
        #expect(try session.run(["show-keychain-info", keychain]).stderr == "Keychain \"\(keychain)\" timeout=60s lock-on-screen-lock\n")
        try session.ok(["set-keychain-settings", "--enforce-access=on", keychain])
        #expect(try session.run(["show-keychain-info", keychain]).stderr == "Keychain \"\(keychain)\" timeout=60s lock-on-screen-lock enforce-access\n")
        let bad = try session.run(["set-keychain-settings", "--enforce-access", "maybe", keychain])
        #expect(bad.exit == 2)
        #expect(bad.stderr.contains("--enforce-access takes on or off"))
        #expect(try info()["enforceAccess"] as? Bool == true)
    }
}
