import Foundation
import Testing

/// lock/unlock, settings, password change, show-keychain-info (docs/cli.md "Keychain commands").
@Suite struct LockAndSettingsTests {
    let session: CLISession
    init() throws { session = try SharedSessions.login() }

    @Test func lockedKeychainsKeepAttributesButNotSecrets() throws {
        let keychain = try session.makeKeychain()
        try session.ok(["add-generic-password", "-a", "a", "-s", "locked-svc", "-w", "pw", keychain])
        let lock = try session.run(["lock-keychain", keychain])
        #expect(lock.exit == 0 && lock.stdout.isEmpty && lock.stderr.isEmpty)

        // Attributes are not secret: the block still prints.
        let block = try session.run(["find-generic-password", "-s", "locked-svc", keychain])
        #expect(block.exit == 0)
        #expect(block.stdout.contains("\"svce\"<blob>=\"locked-svc\""))
        // The secret is not: exit 36 and, as from macOS, nothing at all (the hint is for a
        // terminal: MacOSConformanceTests).
        let secret = try session.run(["find-generic-password", "-s", "locked-svc", "-w", keychain])
        #expect(secret.exit == 36)
        #expect(secret.stdout.isEmpty && secret.stderr.isEmpty)
        #expect(try session.run(["find-generic-password", "-s", "locked-svc", "-g", keychain]).exit == 36)
        let add = try session.run(["add-generic-password", "-a", "b", "-s", "s", "-w", "p", keychain])
        #expect(add.exit == 36)
        #expect(add.stderrLines.first == "keywell: SecKeychainItemCreateFromContent (\(keychain)): User interaction is not allowed.")

        // -q too.
        let quiet = try session.run(["-q", "find-generic-password", "-s", "locked-svc", "-w", keychain])
        #expect(quiet.exit == 36)
        #expect(quiet.stdout.isEmpty && quiet.stderr.isEmpty)

        try session.ok(["unlock-keychain", "-p", "pw", keychain])
        #expect(try session.run(["find-generic-password", "-s", "locked-svc", "-w", keychain]).stdout == "pw\n")
    }

    @Test func unlockChecksThePassword() throws {
        let keychain = try session.makeKeychain(password: "right")
        let wrong = try session.security(["unlock-keychain", "-p", "wrong", keychain])
        #expect(wrong.exit == 51)
        #expect(wrong.stderr == "security: SecKeychainUnlock \(keychain): The user name or passphrase you entered is not correct.\n")
        try session.ok(["lock-keychain", keychain])
        // From standard input when it is not a terminal; the prompt goes to stderr.
        let piped = try session.run(["unlock-keychain", keychain], input: "right\n")
        #expect(piped.exit == 0)
        #expect(piped.stderr.hasPrefix("password to unlock \(keychain): "))
        let eof = try session.run(["unlock-keychain", keychain], input: "")
        #expect(eof.exit == 255)
        #expect(try session.run(["unlock-keychain", ""]).exit == 2)
        #expect(try session.run(["unlock-keychain", keychain, keychain]).exit == 2)
        let agent = try session.run(["unlock-keychain", "-u", keychain])
        #expect(agent.exit == 36)
    }

    @Test func lockAllAndLockUsage() throws {
        let keychain = try session.makeKeychain()
        try session.ok(["add-generic-password", "-a", "a", "-s", "lock-all", "-w", "pw", keychain])
        #expect(try session.run(["lock-keychain", "-a", keychain]).exit == 2)
        #expect(try session.run(["lock-keychain", keychain, keychain]).exit == 2)
        let missing = try session.run(["lock-keychain", "no-such-keychain"])
        #expect(missing.exit == 50)
        #expect(missing.stderrLines.first == "keywell: SecKeychainLock no-such-keychain: The specified keychain could not be found.")
    }

    @Test func settingsAreResetUnlessGiven() throws {
        let keychain = try session.makeKeychain()
        let fresh = try session.run(["show-keychain-info", keychain])
        #expect(fresh.exit == 0)
        #expect(fresh.stdout.isEmpty)
        // macOS's line, then Keywell's own settings (new keychains lock with the screen and
        // enforce access lists).
        #expect(fresh.stderr == "Keychain \"\(keychain)\" lock-on-sleep timeout=300s lock-on-screen-lock enforce-access\n")

        // macOS's flags leave the screen-lock setting alone; only its own option changes it.
        try session.ok(["set-keychain-settings", "--lock-on-screen-lock", "off", "-lut", "7200", keychain])
        #expect(try session.run(["show-keychain-info", keychain]).stderr == "Keychain \"\(keychain)\" lock-on-sleep timeout=7200s enforce-access\n")
        try session.ok(["set-keychain-settings", "-t", "60", keychain])
        #expect(try session.run(["show-keychain-info", keychain]).stderr == "Keychain \"\(keychain)\" timeout=60s enforce-access\n")
        // -u without -t is ignored; no flags at all means no timeout and no lock on sleep.
        try session.ok(["set-keychain-settings", "-u", keychain])
        #expect(try session.run(["show-keychain-info", keychain]).stderr == "Keychain \"\(keychain)\" no-timeout enforce-access\n")
        try session.ok(["set-keychain-settings", "-l", keychain])
        #expect(try session.run(["show-keychain-info", keychain]).stderr == "Keychain \"\(keychain)\" lock-on-sleep no-timeout enforce-access\n")
        // Alone, Keywell's own option leaves macOS's settings as they are.
        try session.ok(["set-keychain-settings", "--lock-on-screen-lock=on", keychain])
        #expect(try session.run(["show-keychain-info", keychain]).stderr == "Keychain \"\(keychain)\" lock-on-sleep no-timeout lock-on-screen-lock enforce-access\n")
        let json = try session.run(["show-keychain-info", keychain, "--json"])
        #expect(json.stdout.contains("\"lockOnScreenLock\":true") || json.stdout.contains("\"lockOnScreenLock\": true"), "\(json.stdout)")
        let bad = try session.run(["set-keychain-settings", "--lock-on-screen-lock", "yes", keychain])
        #expect(bad.exit == 2)
        #expect(bad.stderr.contains("--lock-on-screen-lock takes on or off, not \"yes\""), "\(bad.stderr)")
        let missing = try session.run(["set-keychain-settings", keychain, "--lock-on-screen-lock"])
        #expect(missing.exit == 2)
        // Still on: a refused command changes nothing.
        #expect(try session.run(["show-keychain-info", keychain]).stderr == "Keychain \"\(keychain)\" lock-on-sleep no-timeout lock-on-screen-lock enforce-access\n")
        // The login keychain never locks by itself; without an argument: the default, shown as <NULL>.
        #expect(try session.run(["show-keychain-info"]).stderr == "Keychain \"<NULL>\" no-timeout enforce-access\n")
    }

    @Test func showKeychainInfoOnALockedKeychainExits36() throws {
        let keychain = try session.makeKeychain()
        try session.ok(["lock-keychain", keychain])
        let result = try session.security(["show-keychain-info", keychain])
        #expect(result.exit == 36)
        #expect(result.stderrLines.first == "security: SecKeychainCopySettings \(keychain): User interaction is not allowed.")
        let missing = try session.run(["show-keychain-info", "absent-keychain"])
        #expect(missing.exit == 50)
        #expect(missing.stderrLines.first == "keywell: SecKeychainCopySettings absent-keychain: The specified keychain could not be found.")
    }

    @Test func setKeychainPasswordChangesThePassword() throws {
        let keychain = try session.makeKeychain(password: "old")
        try session.ok(["set-keychain-password", "-o", "old", "-p", "new", keychain])
        #expect(try session.run(["unlock-keychain", "-p", "old", keychain]).exit == 51)
        try session.ok(["unlock-keychain", "-p", "new", keychain])

        let wrong = try session.run(["set-keychain-password", "-o", "bad", "-p", "x", keychain])
        #expect(wrong.exit == 51)
        #expect(wrong.stderr == "keywell: error changing password for \"\(keychain)\": The user name or passphrase you entered is not correct.\n")
        // Prompts read from standard input here: old, new, retyped.
        let mismatch = try session.run(["set-keychain-password", keychain], input: "new\nA\nB\n")
        #expect(mismatch.exit == 1)
        #expect(mismatch.stderr.hasSuffix("keywell: try again\n"))
        try session.ok(["set-keychain-password", keychain], input: "new\nnewer\nnewer\n")
        try session.ok(["unlock-keychain", "-p", "newer", keychain])
    }
}
