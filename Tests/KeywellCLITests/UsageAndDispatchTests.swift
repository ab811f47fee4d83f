import Foundation
import KeywellProtocol
import Testing

/// Global usage, help, usage errors, abbreviations, getopt, progname (docs/cli.md "Commands", "General rules").
@Suite struct UsageAndDispatchTests {
    let session: CLISession
    init() throws { session = try SharedSessions.login() }

    @Test func noCommandPrintsTheGlobalUsageOnStdoutWithExit2() throws {
        let result = try session.run([])
        #expect(result.exit == 2)
        #expect(result.stdout.hasPrefix("""
            Usage: keywell [-h] [-i] [-l] [-p prompt] [-q] [-v] [command] [opt ...]
                -i    Run in interactive mode.
                -l    Run /usr/bin/leaks -nocontext before exiting.
                -p    Set the prompt to "prompt" (implies -i).
                -q    Be less verbose.
                -v    Be more verbose about what's going on.
            keywell commands are:

            """))
        // printf("    %-36s %s\n"), as `security` lists its commands.
        #expect(result.stdout.contains("\n    find-generic-password                Find a generic password item.\n"))
        #expect(result.stdout.contains("\n    help                                 Show all commands, or show usage for a command.\n"))
        #expect(try session.run(["-h"]).exit == 2)
        let help = try session.run(["--help"])
        #expect(help.exit == 0)
        #expect(help.stdout.hasPrefix("Usage: keywell "))
        #expect(help.stdout.contains("\nKeywell: -l is accepted and does nothing."))
    }

    @Test func helpForACommandPrintsItsUsageOnStdout() throws {
        let result = try session.run(["help", "find-generic-password"])
        #expect(result.exit == 0)
        #expect(result.stdout.hasPrefix("Usage: find-generic-password [-h] [-a account] [-s service] [options...] [-g] [keychain...]\n"))
        #expect(result.stderr.isEmpty)
        // `help` matches abbreviations as command dispatch does.
        #expect(try session.run(["help", "find"]).stdout == result.stdout)
        let listing = try session.run(["help"])
        #expect(listing.exit == 0)
        #expect(listing.stdout.contains("    list-keychains                       Display or manipulate the keychain search list.\n"))
        let unknown = try session.run(["help", "frobnicate"])
        #expect(unknown.exit == 1)
        #expect(unknown.stderr.contains("frobnicate"))
    }

    /// `h` is one of the command's getopt letters in `security` (all but show-keychain-info), so
    /// getopt says nothing before the usage.
    @Test(arguments: ["find-generic-password", "add-internet-password", "list-keychains", "lock-keychain",
                      "unlock-keychain", "dump-keychain", "set-keychain-settings", "delete-keychain"])
    func dashHAfterACommandIsUsageWithExit2(command: String) throws {
        let result = try session.run([command, "-h"])
        #expect(result.exit == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("Usage: \(command) [-"))
        // The one-line help closes the usage, indented by 8 spaces.
        #expect(result.stderrLines.contains { $0.hasPrefix("        ") && $0.hasSuffix(".") })
    }

    @Test(arguments: ["find-generic-password", "create-keychain", "dump-keychain", "show-keychain-info",
                      "add-generic-password", "error", "help"])
    func doubleDashHelpPrintsTheFullHelpWithExit0(command: String) throws {
        let result = try session.run([command, "--help"])
        #expect(result.exit == 0)
        #expect(result.stdout.hasPrefix("Usage: \(command) "))
        #expect(result.stdout.contains("--help"))
        #expect(result.stderr.isEmpty)
    }

    @Test func helpExplainsWhyPasswordOptionsAreUnsafe() throws {
        for command in ["add-generic-password", "unlock-keychain", "create-keychain", "set-keychain-password"] {
            let result = try session.run([command, "--help"])
            #expect(result.stdout.contains("/proc/<pid>/cmdline"), "\(command)")
        }
        let find = try session.run(["find-internet-password", "--help"])
        #expect(find.stdout.contains("--json"))
        #expect(find.stdout.contains("securityDomain"))
    }

    @Test func unknownCommandsExit1() throws {
        let result = try session.run(["frobnicate"])
        #expect(result.exit == 1)
        #expect(result.stderr == "keywell: unknown command \"frobnicate\"\n")
    }

    /// progname is basename(argv[0]): through a link named `security`, lines start `security:`.
    @Test func messagesNameTheProgramAsInvoked() throws {
        let unknown = try session.security(["frobnicate"])
        #expect(unknown.stderr == "security: unknown command \"frobnicate\"\n")
        let notFound = try session.security(["find-generic-password", "-s", SharedSessions.unique("absent")])
        #expect(notFound.exit == 44)
        #expect(notFound.stderr == "security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\n")
        let usage = try session.security([])
        #expect(usage.stdout.hasPrefix("Usage: security [-h]"))
        #expect(usage.stdout.contains("\nsecurity commands are:\n"))
    }

    @Test func commandsMatchByPrefixInTableOrder() throws {
        let full = try session.run(["list-keychains"])
        let short = try session.run(["list"])
        #expect(short.exit == 0)
        #expect(short.stdout == full.stdout)
        // `delete` is delete-keychain, the first command starting with it.
        let delete = try session.run(["delete"])
        #expect(delete.exit == 49)
        #expect(delete.stderr == "keywell: SecKeychainDelete: The specified keychain is not a valid keychain file.\n")
        let service = SharedSessions.unique("abbrev")
        try session.ok(["add-generic-pass", "-a", "a", "-s", service, "-w", "pw"])
        #expect(try session.run(["find-generic", "-s", service, "-w"]).stdout == "pw\n")
    }

    @Test func getoptClustersFlagsAndValues() throws {
        let service = SharedSessions.unique("cluster")
        try session.ok(["add-generic-password", "-aacct", "-s\(service)", "-wsecret"])
        // -g and -s clustered, the value in the next word; then -w with the value attached.
        let clustered = try session.run(["find-generic-password", "-gs", service])
        #expect(clustered.exit == 0)
        #expect(clustered.stderr == "password: \"secret\"\n")
        #expect(try session.run(["find-generic-password", "-as", "acct", "-w"]).exit == 44)  // -a's value is "s"
        #expect(try session.run(["find-generic-password", "-aacct", "-ws\(service)"]).stdout == "secret\n")
        // A value may start with a dash; `--` ends the options.
        let dashed = SharedSessions.unique("-dashed")
        try session.ok(["add-generic-password", "-a", "x", "-s", dashed, "-w", "-pw-"])
        #expect(try session.run(["find-generic-password", "-s", dashed, "-w", "--"]).stdout == "-pw-\n")
    }

    /// getopt(3) on macOS names the command by its argv[0] (the word as typed), then the usage.
    @Test func optionsWithoutValuesAndUnknownOptionsAreUsageErrors() throws {
        let missing = try session.run(["find-generic-password", "-s"])
        #expect(missing.exit == 2)
        #expect(missing.stderrLines.first == "find-generic-password: option requires an argument -- s")
        #expect(missing.stderrLines.dropFirst().first?.hasPrefix("Usage: find-generic-password [-h] ") == true)
        let unknown = try session.run(["find-gen", "-Z"])
        #expect(unknown.exit == 2)
        #expect(unknown.stderrLines.first == "find-gen: illegal option -- Z")
        #expect(try session.run(["find-generic-password", "--bogus"]).stderrLines.first == "find-generic-password: illegal option -- -")
        let info = try session.run(["show-keychain-info", "-h"])
        #expect(info.exit == 2)
        #expect(info.stderr == "show-keychain-info: illegal option -- h\nUsage: show-keychain-info [keychain]\n        Show the settings for keychain.\n")
        // The add commands' option strings start with ':': getopt is silent there.
        let add = try session.run(["add-generic-password", "-Z"])
        #expect(add.exit == 2)
        #expect(add.stderr.hasPrefix("Usage: add-generic-password [-h] "))
        // `g` is a getopt letter of the delete commands, which answer it with the usage alone.
        let deleteWithG = try session.run(["delete-generic-password", "-g", "-s", "x"])
        #expect(deleteWithG.exit == 2)
        #expect(deleteWithG.stderr.hasPrefix("Usage: delete-generic-password [-h] "))
        let global = try session.run(["-z"])
        #expect(global.exit == 2)
        #expect(global.stderr == "keywell: illegal option -- z\n")
        #expect(global.stdout.hasPrefix("Usage: keywell [-h] "))
    }

    /// `--version` is a global flag only: a command's own options are still getopt's, so
    /// `find-generic-password --version` is refused as `security` refuses it.
    @Test func versionIsAGlobalFlagThatLeavesCommandsAlone() throws {
        let version = try session.run(["--version"])
        #expect(version.exit == 0)
        #expect(version.stdout == "keywell \(KeywellVersion.string)\n")
        #expect(version.stderr == "")
        #expect(try session.run(["-q", "--version"]).stdout == version.stdout)
        let command = try session.run(["find-generic-password", "--version"])
        #expect(command.exit == 2)
        #expect(command.stderrLines.first == "find-generic-password: illegal option -- -")
        let misspelt = try session.run(["--versio"])
        #expect(misspelt.exit == 2)
        #expect(misspelt.stderr == "keywell: illegal option -- -\n")
    }

    /// `security -v` echoes the command on stderr: its full name, then each argument quoted.
    @Test func verboseEchoesTheCommandAsSecurityDoes() throws {
        let result = try session.run(["-v", "list", "-d", "user"])
        #expect(result.exit == 0)
        #expect(result.stderr == "list-keychains \"-d\" \"user\"\n")
    }

    @Test func errorCommandPrintsMessagesAndExits1() throws {
        let result = try session.run(["error", "-25300", "0xFFFF9D2D", "-25308"])
        #expect(result.exit == 1)
        #expect(result.stdout == """
            Error: 0xFFFF9D2C -25300 The specified item could not be found in the keychain.
            Error: 0xFFFF9D2D -25299 The specified item already exists in the keychain.
            Error: 0xFFFF9D24 -25308 User interaction is not allowed.

            """)
    }

    @Test func fourCharacterCodesMustBeFourBytes() throws {
        let three = try session.run(["find-internet-password", "-s", "x", "-r", "ftp"])
        #expect(three.exit == 1)
        #expect(three.stderr == "Error: four-character types must be exactly 4 characters long.\n(Try \"ftp \" instead of \"ftp\")\n")
        let five = try session.run(["add-generic-password", "-a", "a", "-s", "s", "-c", "abcde"])
        #expect(five.exit == 1)
        #expect(five.stderr == "Error: four-character types must be exactly 4 characters long.\n")
    }

    @Test func interactiveModeRunsOneCommandPerLine() throws {
        let service = SharedSessions.unique("interactive")
        let result = try session.run(["-i"], input: "add-generic-password -a a -s \(service) -w 'two words'\nfind-generic-password -s \(service) -w\nquit\n")
        #expect(result.stdout == "keywell> keywell> two words\nkeywell> ")
    }
}
