import Foundation
import KeywellTestSupport
import Testing

/// `keywell access list|add|remove` against a real keywelld (docs/access-control.md, "Grants a
/// person can manage"). The items are made by keywell, which is trusted as their creator, so
/// changing their lists asks no question (none could be shown here).
@Suite struct AccessGrantsCommandTests {
    let session: CLISession
    init() throws { session = try SharedSessions.login() }

    private func item(_ service: String, _ options: [String] = []) throws -> String {
        let keychain = try session.makeKeychain("grants")
        try session.ok(["add-generic-password", "-a", "acct", "-s", service, "-w", "pw"] + options + [keychain])
        return keychain
    }

    @Test func addListAndRemoveOneProgram() throws {
        let keychain = try item("mail")
        let keywell = try ExpectedProgramIdentity.of(session.keywell), env = try ExpectedProgramIdentity.of("/usr/bin/env")
        let heading = "\(keychain): generic password \"mail\" (service \"mail\", account \"acct\")"

        let added = try session.ok(["access", "add", "-T", "/usr/bin/env", "-s", "mail", "-k", keychain])
        #expect(added.stdout == "\(heading): added \(env)\n")
        #expect(try session.ok(["access", "list", "-k", keychain]).stdout == "\(heading)\n    \(keywell)\n    \(env)\n")
        // --json: the items with "access" as dump-keychain -a --json has it.
        let json = try session.ok(["access", "list", "-k", keychain, "--json"]).stdout
        let items = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        #expect(items.count == 1)
        #expect(items.first?["access"] as? [String] == [keywell, env])
        #expect(try session.run(["access", "add", "-T", "/usr/bin/env", "-s", "mail", "--json"]).exit == 2)
        // dump-keychain -a agrees.
        #expect(try session.ok(["dump-keychain", "-a", keychain]).stdout.contains("1: \(env)\n"))
        // Adding again changes nothing.
        #expect(try session.ok(["access", "add", "-T", "/usr/bin/env", "-s", "mail", "-k", keychain]).stdout
            == "\(heading): already trusts \(env)\n")
        // Every item the program was granted.
        #expect(try session.ok(["access", "list", "--identity", env, "-k", keychain]).stdout.hasPrefix(heading))

        let removed = try session.ok(["access", "remove", "--identity", env, "-k", keychain])
        #expect(removed.stdout == "\(heading): removed \(env)\n")
        #expect(try session.ok(["access", "list", "-k", keychain]).stdout == "\(heading)\n    \(keywell)\n")
    }

    @Test func zeroMatchesIsAnErrorAndChangesNothing() throws {
        let keychain = try item("mail")
        let none = try session.run(["access", "add", "-T", "/usr/bin/env", "-s", "other", "-k", keychain])
        #expect(none.exit == 44, "\(none)")
        #expect(none.stderr.contains("no item matching"))
        let notGranted = try session.run(["access", "remove", "-T", "/usr/bin/env", "-k", keychain])
        #expect(notGranted.exit == 44, "\(notGranted)")
        #expect(try session.run(["access", "list", "-T", "/usr/bin/env", "-k", keychain]).exit == 44)
    }

    @Test func anyApplicationAndNoApplication() throws {
        let keychain = try item("open", ["-A"])
        #expect(try session.ok(["access", "list", "-k", keychain]).stdout.hasSuffix("\n    any application\n"))
        #expect(try session.ok(["access", "add", "-T", "/usr/bin/env", "-s", "open", "-k", keychain]).stdout
            .hasSuffix(": trusts any application; unchanged\n"))
    }

    @Test func usageErrors() throws {
        #expect(try session.run(["access"]).exit == 2)
        #expect(try session.run(["access", "grant"]).exit == 2)
        #expect(try session.run(["access", "add", "-s", "x"]).exit == 2)
        #expect(try session.run(["access", "add", "-T", "/usr/bin/env"]).exit == 2)
        #expect(try session.run(["access", "remove", "-T", "/usr/bin/env", "--identity", "exe:/x"]).exit == 2)
        let missing = try session.run(["access", "add", "-T", "/no/such/program", "-s", "x"])
        #expect(missing.exit == 1)
        #expect(missing.stderr.contains("/no/such/program"))
    }
}
