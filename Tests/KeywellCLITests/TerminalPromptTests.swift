import Foundation
import Testing

/// Password prompts on a real (pseudo-)terminal: asked on /dev/tty with echo off.
@Suite struct TerminalPromptTests {
    let session: CLISession
    init() throws { session = try SharedSessions.login() }

    @Test func unlockAsksOnTheTerminalWithoutEcho() throws {
        let keychain = try session.makeKeychain("tty", password: "tty-secret-1")
        try session.ok(["lock-keychain", keychain])
        let terminal = try PseudoTerminalRun(session, ["unlock-keychain", keychain])
        try terminal.waitFor("password to unlock \(keychain): ")
        terminal.type("tty-secret-1\n")
        let termination = try terminal.finish()
        #expect(termination.exitCode == 0, "\(terminal.text.debugDescription)")
        #expect(!terminal.text.contains("tty-secret-1"), "the password was echoed: \(terminal.text.debugDescription)")
        try session.ok(["show-keychain-info", keychain])  // unlocked: no exit 36
    }

    @Test func wrongPasswordOnTheTerminal() throws {
        let keychain = try session.makeKeychain("ttywrong", password: "right")
        let terminal = try PseudoTerminalRun(session, ["unlock-keychain", keychain])
        try terminal.waitFor("password to unlock \(keychain): ")
        terminal.type("wrong-typed\n")
        let termination = try terminal.finish()
        #expect(termination.exitCode == 51)
        #expect(!terminal.text.contains("wrong-typed"))
        #expect(terminal.text.contains("keywell: SecKeychainUnlock \(keychain): The user name or passphrase you entered is not correct."))
    }

    @Test func createKeychainAsksTwiceAndRetriesOnMismatch() throws {
        let name = SharedSessions.unique("ttycreate")
        let terminal = try PseudoTerminalRun(session, ["create-keychain", name])
        try terminal.waitFor("password for new keychain: ")
        terminal.type("first-try\n")
        try terminal.waitFor("retype password for new keychain: ")
        terminal.type("different\n")
        try terminal.waitFor("passwords don't match")
        try terminal.waitFor("password for new keychain: ")
        terminal.type("agreed-pw\n")
        try terminal.waitFor("retype password for new keychain: ")
        terminal.type("agreed-pw\n")
        #expect(try terminal.finish().exitCode == 0)
        for secret in ["first-try", "different", "agreed-pw"] { #expect(!terminal.text.contains(secret)) }
        #expect(try session.run(["unlock-keychain", "-p", "agreed-pw", name]).exit == 0)
    }

    @Test func exportAsksThePassphraseTwiceAndImportOnce() throws {
        let keychain = try session.makeKeychain("ttyexport", password: "pw")
        let other = try session.makeKeychain("ttyimport", password: "pw")
        try session.ok(["add-generic-password", "-a", "a", "-s", "exported", "-w", "export-item-secret", keychain])
        let file = session.bus.directory.subpath(SharedSessions.unique("export") + ".kwexport")
        let export = try PseudoTerminalRun(session, ["export", "-k", keychain, file])
        try export.waitFor("passphrase for the export: ")
        export.type("first-phrase\n")
        try export.waitFor("retype passphrase: ")
        export.type("other-phrase\n")
        try export.waitFor("passphrases don't match")
        try export.waitFor("passphrase for the export: ")
        export.type("agreed-phrase\n")
        try export.waitFor("retype passphrase: ")
        export.type("agreed-phrase\n")
        #expect(try export.finish().exitCode == 0, "\(export.text.debugDescription)")
        for secret in ["first-phrase", "other-phrase", "agreed-phrase"] { #expect(!export.text.contains(secret)) }

        let importing = try PseudoTerminalRun(session, ["import", "-k", other, file])
        try importing.waitFor("passphrase of the export: ")
        importing.type("agreed-phrase\n")
        #expect(try importing.finish().exitCode == 0, "\(importing.text.debugDescription)")
        #expect(!importing.text.contains("agreed-phrase"))
        #expect(try session.run(["find-generic-password", "-s", "exported", "-w", other]).stdout == "export-item-secret\n")
    }

    @Test func addGenericPasswordWithTrailingDashW() throws {
        let service = SharedSessions.unique("ttyadd")
        let terminal = try PseudoTerminalRun(session, ["add-generic-password", "-a", "a", "-s", service, "-w"])
        try terminal.waitFor("password data for new item: ")
        terminal.type("item-secret\n")
        try terminal.waitFor("retype password for new item: ")
        terminal.type("item-secret\n")
        #expect(try terminal.finish().exitCode == 0)
        #expect(!terminal.text.contains("item-secret"))
        #expect(try session.run(["find-generic-password", "-s", service, "-w"]).stdout == "item-secret\n")
    }

    /// A password given with -p stops showing in /proc/<pid>/cmdline once it has been read.
    @Test func passwordOptionsAreWipedFromTheCommandLine() throws {
        let terminal = try PseudoTerminalRun(session, ["create-keychain", "-p", "argv-secret"])
        // With no keychain name it asks for one: the program waits there, options already read.
        try terminal.waitFor("keychain to create: ")
        let commandLine = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(terminal.pid)/cmdline"))
        #expect(commandLine.range(of: Data("argv-secret".utf8)) == nil)
        #expect(commandLine.range(of: Data("create-keychain".utf8)) != nil)
        let name = SharedSessions.unique("argv")
        terminal.type(name + "\n")
        #expect(try terminal.finish().exitCode == 0)
        #expect(terminal.text.contains(name))  // a name is echoed, unlike a password
        try session.ok(["unlock-keychain", "-p", "argv-secret", name])
    }

    @Test func interruptRestoresEcho() throws {
        // Ctrl-C at the prompt ends the program, and the terminal echoes again afterwards.
        let keychain = try session.makeKeychain("ttyint")
        let terminal = try PseudoTerminalRun(session, ["unlock-keychain", keychain])
        try terminal.waitFor("password to unlock \(keychain): ")
        #expect(!terminal.echoIsOn)
        terminal.type("\u{03}")
        let termination = try terminal.finish()
        #expect(termination.signal == SIGINT)
        #expect(terminal.echoIsOn)
    }
}
