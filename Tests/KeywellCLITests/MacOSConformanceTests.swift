import Foundation
import KeywellTestSupport
import Testing

/// Issue 21: scenarios from outside suites written against macOS `security`, run through a pipe
/// (a script: exactly macOS's output) and, where Keywell adds hints, through a terminal.
@Suite struct MacOSConformanceTests {
    // MARK: 1. The search list follows the default keychain until one is set

    /// The common CI pattern: create a keychain, make it the default, store, read back.
    @Test func theSearchListFollowsTheDefaultKeychainUntilOneIsSet() throws {
        let session = try CLISession()
        // A fresh user's default is `login` (file or not): the list names it, never a new keychain.
        #expect(try session.ok(["list-keychains"]).stdout == "    \"\(session.path(of: "login"))\"\n")
        try session.ok(["create-keychain", "-p", "pa", "A"])
        #expect(try session.ok(["list-keychains"]).stdout == "    \"\(session.path(of: "login"))\"\n")
        try session.ok(["default-keychain", "-s", "A"])
        try session.ok(["add-generic-password", "-a", "u", "-s", "svc", "-w", "x"])
        let found = try session.run(["find-generic-password", "-s", "svc", "-w"])
        #expect(found.exit == 0)
        #expect(found.stdout == "x\n")
        #expect(found.stderr.isEmpty)
        #expect(try session.ok(["list-keychains"]).stdout == "    \"\(session.path(of: "A"))\"\n")

        // A list the user set stays as set when the default moves.
        try session.ok(["create-keychain", "-p", "pb", "B"])
        try session.ok(["list-keychains", "-s", "A"])
        try session.ok(["default-keychain", "-s", "B"])
        #expect(try session.ok(["list-keychains"]).stdout == "    \"\(session.path(of: "A"))\"\n")
        #expect(try session.run(["find-generic-password", "-s", "svc", "-w"]).stdout == "x\n")
    }

    // MARK: 2. Hints only on a terminal

    @Test func aLockedSecretPrintsNothingToAScriptAndAHintToAPerson() throws {
        let session = try SharedSessions.login()
        let keychain = try session.makeKeychain("hint")
        try session.ok(["add-generic-password", "-a", "a", "-s", "hint-svc", "-w", "pw", keychain])
        try session.ok(["lock-keychain", keychain])
        let piped = try session.security(["find-generic-password", "-s", "hint-svc", "-w", keychain])
        #expect(piped.exit == 36)
        #expect(piped.stdout.isEmpty && piped.stderr.isEmpty)

        // A person is asked for the keychain's password (docs/prompts.md); one who gives none
        // (end of input) gets the failure and the hint.
        let terminal = try PseudoTerminalRun(session, ["find-generic-password", "-s", "hint-svc", "-w", keychain])
        try terminal.waitFor("password to unlock \(keychain): ")
        terminal.type("\u{4}")
        #expect(try terminal.finish().exitCode == 36)
        #expect(terminal.text.contains("keychain \"\(keychain)\" is locked: run `keywell unlock-keychain \(keychain)`"),
                "\(terminal.text.debugDescription)")
        let quiet = try PseudoTerminalRun(session, ["-q", "find-generic-password", "-s", "hint-svc", "-w", keychain])
        try quiet.waitFor("password to unlock \(keychain): ")
        quiet.type("\u{4}")
        #expect(try quiet.finish().exitCode == 36)
        #expect(!quiet.text.contains("is locked"), "\(quiet.text.debugDescription)")
    }

    /// Every error line that used to carry a hint: on a pipe, macOS's line alone.
    @Test func errorLinesOnAPipeAreExactlyMacOSs() throws {
        let session = try SharedSessions.login()
        let ghost = SharedSessions.unique("ghost")
        let notFound = "The specified keychain could not be found."
        let cases: [([String], Int32, String)] = [
            (["lock-keychain", ghost], 50, "security: SecKeychainLock \(ghost): \(notFound)\n"),
            (["unlock-keychain", "-p", "x", ghost], 50, "security: SecKeychainUnlock \(ghost): \(notFound)\n"),
            (["delete-keychain", ghost], 50, "security: SecKeychainDelete: \(notFound)\n"),
            (["show-keychain-info", ghost], 50, "security: SecKeychainCopySettings \(ghost): \(notFound)\n"),
            (["set-keychain-settings", ghost], 50, "security: SecKeychainSetSettings \(ghost): \(notFound)\n"),
            (["add-generic-password", "-a", "a", "-s", "s", ghost], 50,
             "security: SecKeychainItemCreateFromContent (\(ghost)): \(notFound)\n"),
            (["create-keychain", "-p", "pw", "login"], 48,
             "security: SecKeychainCreate login: A keychain with the same name already exists.\n"),
        ]
        for (arguments, exit, stderr) in cases {
            let result = try session.security(arguments)
            #expect(result.exit == exit, "\(arguments)")
            #expect(result.stderr == stderr, "\(arguments)")
            #expect(result.stdout.isEmpty, "\(arguments)")
        }
        let terminal = try PseudoTerminalRun(session, ["lock-keychain", ghost])
        #expect(try terminal.finish().exitCode == 50)
        #expect(terminal.text.contains("keychain \"\(ghost)\" does not exist"), "\(terminal.text.debugDescription)")
    }

    // MARK: 3. Changing settings is use

    @Test func loweringTheTimeoutOfAnIdleKeychainDoesNotLockItAtOnce() throws {
        let session = try SharedSessions.login()
        let keychain = try session.makeKeychain("idle")
        // Idle longer than the new timeout (the new keychain's is 300 s).
        Thread.sleep(forTimeInterval: 6)
        try session.ok(["set-keychain-settings", "-t", "5", keychain])
        let info = try session.run(["show-keychain-info", keychain])
        #expect(info.exit == 0, "\(info)")
        #expect(info.stderr == "Keychain \"\(keychain)\" timeout=5s lock-on-screen-lock enforce-access\n")
        // The timer still runs: left alone, the keychain locks by itself.
        try waitFor(timeout: .seconds(120)) { try session.run(["show-keychain-info", keychain]).exit == 36 }
    }

    // MARK: 4. Usage lines

    @Test func usageLinesAreSecuritysWithDashHFirst() throws {
        let session = try SharedSessions.login()
        let help = try session.run(["help", "add-generic-password"])
        #expect(help.stdout.hasPrefix("Usage: add-generic-password [-h] [-a account] [-s service] [-w password] [options...] [-A|-T appPath] [keychain]\n"))
        #expect(help.stdout.hasSuffix("Use of the -p or -w options is insecure. Specify -w as the last option to be prompted.\n\n"))
        #expect(try session.run(["help", "create-keychain"]).stdout == """
            Usage: create-keychain [-hP] [-p password] [keychain...]
                -p  Use "password" as the password for the keychains being created
                -P  Prompt the user for a password using the SecurityAgent
            Use of the -p option is insecure

            """)
        let usage = try session.run(["dump-keychain", "-h"])
        #expect(usage.exit == 2)
        #expect(usage.stderrLines.first == "Usage: dump-keychain [-adhir] [keychain...]")
        // --help tells the truth about the search list; it does not also claim the opposite.
        let full = try session.run(["create-keychain", "--help"])
        #expect(full.stdout.contains("not added to the search list"))
        #expect(!full.stdout.contains("and add them to the search list"))
    }

    // MARK: 8. A forgotten -s

    @Test func aForgottenDashSIsExplainedOnATerminalOnly() throws {
        let session = try SharedSessions.login()
        let name = SharedSessions.unique("myapp")
        try session.ok(["add-generic-password", "-a", "a", "-s", name, "-w", "pw"])
        let piped = try session.security(["find-generic-password", name])
        #expect(piped.exit == 44)
        #expect(piped.stdout.isEmpty)
        #expect(piped.stderr == "security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\n")

        let terminal = try PseudoTerminalRun(session, ["find-generic-password", name])
        #expect(try terminal.finish().exitCode == 44)
        #expect(terminal.text.contains("keywell: SecKeychainSearchCopyNext: The specified item could not be found in the keychain."))
        #expect(terminal.text.contains("no keychain \"\(name)\" exists"), "\(terminal.text.debugDescription)")
        #expect(terminal.text.contains("use -s \(name)"))
        // An item that is simply absent from keychains that exist gets no such hint.
        let absent = try PseudoTerminalRun(session, ["find-generic-password", "-s", SharedSessions.unique("absent")])
        #expect(try absent.finish().exitCode == 44)
        #expect(!absent.text.contains("no keychain"))
    }

    /// Polls `condition` until it holds; the timeout only guards against a hang.
    private func waitFor(timeout: Duration, _ condition: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while try !condition() {
            guard ContinuousClock.now < deadline else { throw TestSupportError("condition never held") }
            Thread.sleep(forTimeInterval: 0.5)
        }
    }
}
