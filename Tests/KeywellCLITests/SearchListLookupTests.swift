import Foundation
import Testing

/// A lookup with no keychain named: one request over the search list (docs/cli.md "Password
/// commands"), which still says where the item was found.
@Suite struct SearchListLookupTests {
    /// A session of its own: the tests change the search list.
    @Test func theBlockNamesTheKeychainTheItemWasFoundIn() throws {
        let session = try CLISession.withLogin()
        let other = try session.makeKeychain("other")
        try session.ok(["list-keychains", "-s", "login", other])
        try session.ok(["add-generic-password", "-a", "a", "-s", "in-other", "-w", "pw-other", other])

        #expect(try session.ok(["find-generic-password", "-s", "in-other", "-w"]).stdout == "pw-other\n")
        let block = try session.ok(["find-generic-password", "-s", "in-other"])
        #expect(block.stdout.hasPrefix("keychain: \"\(session.path(of: other))\"\n"))
        let json = try session.ok(["find-generic-password", "-s", "in-other", "--json"])
        #expect(json.stdout.contains(session.path(of: other)))
        // Deleting shows the same block, then removes that item.
        let deleted = try session.ok(["delete-generic-password", "-s", "in-other"])
        #expect(deleted.stdout.hasPrefix("keychain: \"\(session.path(of: other))\"\n"))
        #expect(try session.run(["find-generic-password", "-s", "in-other"]).exit == 44)
    }

    @Test func aSecretComesFromTheFirstUnlockedKeychainThatHasIt() throws {
        let session = try CLISession.withLogin()
        let locked = try session.makeKeychain("locked")
        try session.ok(["list-keychains", "-s", locked, "login"])
        try session.ok(["add-generic-password", "-a", "a", "-s", "both", "-w", "pw-locked", locked])
        try session.ok(["add-generic-password", "-a", "a", "-s", "both", "-w", "pw-login"])
        try session.ok(["add-generic-password", "-a", "a", "-s", "locked-only", "-w", "pw-locked", locked])
        try session.ok(["lock-keychain", locked])

        #expect(try session.ok(["find-generic-password", "-s", "both", "-w"]).stdout == "pw-login\n")
        let shown = try session.run(["find-generic-password", "-s", "both", "-g"])
        #expect(shown.exit == 0 && shown.stdout.hasPrefix("keychain: \"\(session.path(of: "login"))\"\n"))
        #expect(shown.stderr == "password: \"pw-login\"\n")
        // Attributes are readable in a locked keychain: without a secret, its match comes first.
        #expect(try session.ok(["find-generic-password", "-s", "both"]).stdout
            .hasPrefix("keychain: \"\(session.path(of: locked))\"\n"))
        // Only the locked keychain has it: exit 36, as before.
        let refused = try session.run(["find-generic-password", "-s", "locked-only", "-w"])
        #expect(refused.exit == 36 && refused.stdout.isEmpty)
        #expect(try session.run(["find-generic-password", "-s", "nowhere", "-w"]).exit == 44)
    }
}
