import Foundation
import Testing

/// create/delete/list/default/login keychain (docs/cli.md "Keychain commands"). Each test that changes the
/// default keychain or the search list gets a session of its own.
@Suite struct KeychainCommandTests {
    @Test func aFreshUserHasNoDefaultAndNoLoginKeychain() throws {
        let session = try CLISession()
        let list = try session.run(["list-keychains"])
        #expect(list.exit == 0)
        #expect(list.stdout == "    \"\(session.path(of: "login"))\"\n")
        let defaultKeychain = try session.run(["default-keychain"])
        #expect(defaultKeychain.exit == 1)
        #expect(defaultKeychain.stderr.hasPrefix("keywell: SecKeychainCopyDefault: A default keychain could not be found.\n"))
        let login = try session.run(["login-keychain"])
        #expect(login.exit == 1)
        #expect(login.stderr.hasPrefix("keywell: SecKeychainCopyLogin: The specified keychain could not be found.\n"))
        let add = try session.run(["add-generic-password", "-a", "a", "-s", "s", "-w", "p"])
        #expect(add.exit == 37)
        #expect(add.stderrLines.first == "keywell: SecKeychainItemCreateFromContent (<default>): A default keychain could not be found.")
    }

    @Test func createKeychainMakesAnUnlockedKeychainOutsideTheSearchList() throws {
        let session = try CLISession.withLogin()
        let created = try session.run(["create-keychain", "-p", "pw", "work"])
        #expect(created.exit == 0)
        #expect(created.stdout.isEmpty && created.stderr.isEmpty)
        #expect(FileManager.default.fileExists(atPath: session.path(of: "work")))
        #expect(try session.run(["list-keychains"]).stdout == "    \"\(session.path(of: "login"))\"\n")
        try session.ok(["add-generic-password", "-a", "a", "-s", "s", "-w", "p", "work"])

        let duplicate = try session.security(["create-keychain", "-p", "pw", "work"])
        #expect(duplicate.exit == 48)
        #expect(duplicate.stderrLines.first == "security: SecKeychainCreate work: A keychain with the same name already exists.")
    }

    @Test func keychainsAreNamedByNameMacOSNameOrPath() throws {
        let session = try CLISession.withLogin()
        // `build.keychain` is the file build.keychain-db, as macOS's -db rule would make it.
        try session.ok(["create-keychain", "-p", "pw", "build.keychain"])
        #expect(FileManager.default.fileExists(atPath: session.path(of: "build")))
        try session.ok(["unlock-keychain", "-p", "pw", "build"])
        let absolute = session.bus.directory.subpath("elsewhere.keychain-db")
        try session.ok(["create-keychain", "-p", "pw", absolute])
        try session.ok(["list-keychains", "-s", "build.keychain", absolute, "login"])
        #expect(try session.run(["list-keychains"]).stdout == """
                "\(session.path(of: "build"))"
                "\(absolute)"
                "\(session.path(of: "login"))"

            """)
    }

    @Test func listKeychainsSetsAndShowsTheSearchList() throws {
        let session = try CLISession.withLogin()
        try session.ok(["create-keychain", "-p", "pw", "b"])
        // Order is kept and keychains that do not exist are accepted.
        try session.ok(["list-keychains", "-s", "b", "missing", "login"])
        let expected = "    \"\(session.path(of: "b"))\"\n    \"\(session.path(of: "missing"))\"\n    \"\(session.path(of: "login"))\"\n"
        #expect(try session.run(["list-keychains"]).stdout == expected)
        #expect(try session.run(["list-keychains", "-d", "user"]).stdout == expected)
        #expect(try session.run(["list-keychains", "-d", "u"]).stdout == expected)  // a prefix
        #expect(try session.run(["list-keychains", "-d", "system"]).stdout == "")
        let bad = try session.run(["list-keychains", "-d", "bogus"])
        #expect(bad.exit == 2)
        #expect(bad.stderr.hasPrefix("keywell: Invalid domain: bogus\nUsage: list-keychains "))
        #expect(try session.run(["list-keychains", "login"]).exit == 2)
        // Searches skip the missing keychain.
        try session.ok(["add-generic-password", "-a", "a", "-s", "in-b", "-w", "pw-b", "b"])
        #expect(try session.run(["find-generic-password", "-s", "in-b", "-w"]).stdout == "pw-b\n")
    }

    @Test func defaultKeychainShowsAndSetsTheDefault() throws {
        let session = try CLISession.withLogin()
        #expect(try session.run(["default-keychain"]).stdout == "    \"\(session.path(of: "login"))\"\n")
        try session.ok(["create-keychain", "-p", "pw", "other"])
        let set = try session.run(["default-keychain", "-s", "other"])
        #expect(set.exit == 0 && set.stdout.isEmpty && set.stderr.isEmpty)
        #expect(try session.run(["default-keychain"]).stdout == "    \"\(session.path(of: "other"))\"\n")
        #expect(try session.run(["default-keychain", "-d", "user"]).stdout == "    \"\(session.path(of: "other"))\"\n")
        // Adds go to the default keychain.
        try session.ok(["add-generic-password", "-a", "a", "-s", "to-default", "-w", "p"])
        #expect(try session.run(["find-generic-password", "-s", "to-default", "other"]).exit == 0)
        // -s alone changes nothing.
        try session.ok(["default-keychain", "-s"])
        #expect(try session.run(["default-keychain"]).stdout == "    \"\(session.path(of: "other"))\"\n")

        let missing = try session.run(["default-keychain", "-s", "nope"])
        #expect(missing.exit == 1)
        #expect(missing.stderr == "Will not set default: file \(session.path(of: "nope")) does not exist\n"
            + "keywell: SecKeychainSetDefault: Write permissions error.\n")
        #expect(try session.run(["default-keychain", "-s", "a", "b"]).exit == 2)
        let dynamic = try session.run(["default-keychain", "-d", "dynamic"])
        #expect(dynamic.exit == 1)
        #expect(dynamic.stderr == "keywell: SecKeychainCopyDomainDefault dynamic: The specified preferences domain is not valid.\n")
        // With -d, security names the domain-variant function and the domain (no colon between).
        let withDomain = try session.run(["default-keychain", "-d", "user", "-s", "nope"])
        #expect(withDomain.exit == 1)
        #expect(withDomain.stderrLines.last == "keywell: SecKeychainSetDomainDefault user: Write permissions error.")
        let system = try session.run(["list-keychains", "-d", "system", "-s", "other"])
        #expect(system.exit == 1)
        #expect(system.stderr == "keywell: SecKeychainSetDomainSearchList system: The specified preferences domain is not valid.\n")
    }

    @Test func loginKeychainPrintsThePathAndIgnoresSetting() throws {
        let session = try CLISession.withLogin()
        #expect(try session.run(["login-keychain"]).stdout == "    \"\(session.path(of: "login"))\"\n")
        // -s and -d are compiled out on macOS: a silent exit 1.
        for arguments in [["login-keychain", "-s", "login"], ["login-keychain", "-d", "user"]] {
            let result = try session.run(arguments)
            #expect(result.exit == 1)
            #expect(result.stdout.isEmpty && result.stderr.isEmpty)
        }
    }

    @Test func deleteKeychainRemovesTheFileTheListEntryAndTheDefault() throws {
        let session = try CLISession.withLogin()
        try session.ok(["create-keychain", "-p", "pw", "gone"])
        try session.ok(["list-keychains", "-s", "login", "gone"])
        try session.ok(["default-keychain", "-s", "gone"])
        let deleted = try session.run(["delete-keychain", "gone"])
        #expect(deleted.exit == 0 && deleted.stdout.isEmpty && deleted.stderr.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: session.path(of: "gone")))
        #expect(try session.run(["list-keychains"]).stdout == "    \"\(session.path(of: "login"))\"\n")
        // No fallback to the login keychain once the default was deleted.
        #expect(try session.run(["default-keychain"]).exit == 1)

        let missing = try session.security(["delete-keychain", "gone"])
        #expect(missing.exit == 50)
        #expect(missing.stderrLines.first == "security: SecKeychainDelete: The specified keychain could not be found.")
        let none = try session.security(["delete-keychain"])
        #expect(none.exit == 49)
        #expect(none.stderr == "security: SecKeychainDelete: The specified keychain is not a valid keychain file.\n")
    }
}
