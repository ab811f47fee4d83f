import ArgumentParser
import Foundation
import KeywellProtocol

/// `keywell-bench questions`: a scripted desktop day, counting the access questions keywelld asks
/// (docs/access-control.md, "The question"). A counting prompter (KEYWELL_PINENTRY) answers every
/// question Always Allow, as a person who wants to be asked once does; each program's runs are
/// checked to get their secret, so a silent denial cannot pass for "no question". Target: at most
/// one question per program over the whole day (a keywelld restart included), and none for a
/// system program after its upgrade. gnome-keyring asks none, having no access control.
///
/// Seahorse's reveals are measured through the calls Seahorse makes, not through Seahorse's
/// window: a python3-gi libsecret client lists the items and loads one secret with
/// `secret_item_load_secret` (a bare `GetSecret`, no retry), one run per password revealed.
struct QuestionBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "questions",
        abstract: "A scripted desktop day: the access questions each program is asked (target: at most one per program, none after an upgrade)."
    )

    @Option(help: "The keywelld to run (default: the one next to this program).")
    var keywelld: String?

    @Option(help: "The keywell CLI to run (default: the one next to this program).")
    var keywell: String?

    @Option(help: "Runs of secret-tool and of the python keyring script over the day.")
    var runs = 20

    @Option(help: "Chromium launches over the day.")
    var launches = 5

    /// The person's answer to every question: the NOTOK button (GPG_ERR_NOT_CONFIRMED from pinentry).
    static let alwaysAllow = "ERR \(PinentryErrorCode.notConfirmed) Not confirmed <Pinentry>"
    static let systemPrograms = ["backup-tool", "mail-sync", "vpn-helper"]
    /// The program that saved the passwords Seahorse reveals (a system program, not upgraded).
    static let browser = "web-browser"
    static let sites = ["example-1.org", "example-2.org", "example-3.org"]
    static let seahorse = "Seahorse's reveal (libsecret load_secret)"
    static let secretTool = "/usr/bin/secret-tool"
    static let python = "/usr/bin/python3"
    static let chromium = "/usr/bin/chromium"
    /// The item Chromium keeps its cookie and password key in (libsecret, schema v2).
    static let chromiumItem = "chrome_libsecret_os_crypt_password_v2"
    static let password = "day-password"
    static let control = "user-owned copy (control)"

    func run() throws {
        guard runs >= 2, launches >= 1 else { throw ValidationError("--runs must be at least 2 (half before the upgrade, half after), --launches at least 1") }
        guard getuid() == 0 else { throw BenchmarkFailure("run it as root: the system programs are copies in a root-owned folder under /opt") }
        for tool in [Self.secretTool, Self.python, Self.chromium] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw BenchmarkFailure("\(tool) is missing: run scripts/setup.sh")
        }
        let daemon = try locateKeywelld(keywelld)
        let cli = try locateSibling("keywell", given: keywell)

        let scratch = try PrivateBusConfiguration.makeScratchFolder(prefix: "kwquestions")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let prompter = try CountingPrompter(folder: scratch)
        let world = try ActivatedDaemonWorld(daemonPath: daemon, extraEnvironment: ["KEYWELL_PINENTRY": prompter.path])
        let system = try SystemPrograms(names: Self.systemPrograms + [Self.browser], copying: Self.secretTool)
        defer { system.remove() }
        var day = Day(world: world, prompter: prompter)

        // Morning: the login keychain, and each program's own item (made by it: trusted).
        try day.check([cli, "create-keychain", "login"], input: "\(Self.password)\n\(Self.password)\n")
        try day.store(Self.secretTool, service: "mail", secret: "mail-token")
        let script = world.home + "/sync-notes.py"
        try Self.keyringScript.write(toFile: script, atomically: true, encoding: .utf8)
        try day.check([Self.python, script, "store"], input: "notes-key")
        for name in Self.systemPrograms { try day.store(system.path(name), service: name, secret: "\(name)-secret") }
        // The browser saves three passwords: one list, its own, on all three.
        for site in Self.sites {
            try day.check([system.path(Self.browser), "store", "--label=\(site)", "site", site], input: "\(site)-password")
        }
        let reveal = world.home + "/seahorse-reveal.py"
        try Self.revealScript.write(toFile: reveal, atomically: true, encoding: .utf8)
        // The control: a copy the user could replace (in the scratch folder, under sticky /tmp)
        // keeps its hash, so its upgrade is asked about once: the counter must see that question.
        let userCopy = scratch + "/user-tool"
        try FileManager.default.copyItem(atPath: Self.secretTool, toPath: userCopy)
        try day.store(userCopy, service: "user-tool", secret: "user-tool-secret")

        // The day: secret-tool reads the script's item, the script reads secret-tool's, each
        // system program its own; half the runs, then upgrades and a keywelld restart, then the rest.
        var counts: [String: (runs: Int, questions: Int, afterUpgrade: Int)] = [:]
        func note(_ program: String, _ questions: Int, upgraded: Bool) {
            var entry = counts[program] ?? (0, 0, 0)
            entry.runs += 1
            entry.questions += questions
            if upgraded { entry.afterUpgrade += questions }
            counts[program] = entry
        }
        for half in 0..<2 {
            let upgraded = half == 1
            if upgraded {
                for name in Self.systemPrograms { try system.upgrade(name) }
                try SystemPrograms.upgrade(at: userCopy)
                try day.restartDaemon(cli: cli)
            }
            let share = half == 0 ? runs / 2 : runs - runs / 2
            // Chromium: its first launch makes its Safe Storage key (it trusts itself); the rest read it.
            for _ in 0..<(half == 0 ? (launches + 1) / 2 : launches / 2) {
                note("Chromium", try day.asked { try day.launchChromium(profile: world.home + "/chromium") }, upgraded: upgraded)
            }
            for _ in 0..<share {
                note("secret-tool", try day.asked { try day.lookup(Self.secretTool, ["service", "notes", "username", "me"], expect: "notes-key") },
                     upgraded: upgraded)
                note("python keyring script", try day.asked { try day.expect([Self.python, script, "read"], "mail-token") }, upgraded: upgraded)
            }
            for name in Self.systemPrograms {
                note("\(name) (system, upgraded)", try day.asked {
                    try day.lookup(system.path(name), ["service", name, "username", "me"], expect: "\(name)-secret")
                }, upgraded: upgraded)
            }
            // Seahorse reveals the browser's three passwords, one run each (no burst to share).
            for site in Self.sites {
                note(Self.seahorse, try day.asked { try day.expect([Self.python, reveal, site], "\(site)-password") }, upgraded: upgraded)
            }
            for _ in 0..<2 {
                note(Self.control, try day.asked {
                    try day.lookup(userCopy, ["service", "user-tool", "username", "me"], expect: "user-tool-secret")
                }, upgraded: upgraded)
            }
        }

        print("Questions in a scripted desktop day: \(ProcessInfo.processInfo.activeProcessorCount) cores, private bus, keywelld activated,")
        print("every question answered Always Allow; system programs upgraded and keywelld restarted at midday")
        let header = "program".padding(toLength: 42, withPad: " ", startingAt: 0)
        print("\(header) runs  keywell  after upgrade  gnome-keyring")
        var met = true
        // Every launch found the one key the first made: none was denied and made a new one.
        let keys = try day.chromiumKeys(cli: cli)
        guard keys == 1 else { throw BenchmarkFailure("Chromium's launches left \(keys) Safe Storage keys (denied, it makes another)") }
        let order = ["Chromium", "secret-tool", "python keyring script", Self.seahorse]
            + Self.systemPrograms.map { "\($0) (system, upgraded)" }
        for program in order {
            guard let entry = counts[program] else { continue }
            let systemProgram = program.hasSuffix("(system, upgraded)")
            let ok = entry.questions <= 1 && (!systemProgram || entry.afterUpgrade == 0)
            met = met && ok
            print(String(format: "%@ %4d  %7d  %13d  %13d%@", program.padding(toLength: 42, withPad: " ", startingAt: 0),
                         entry.runs, entry.questions, entry.afterUpgrade, 0, ok ? "" : "  <- missed"))
        }
        // The control is asked exactly once, after its upgrade; anything else means the counter is blind.
        let control = counts[Self.control] ?? (0, 0, 0)
        let counted = control.questions == 1 && control.afterUpgrade == 1
        met = met && counted
        print(String(format: "%@ %4d  %7d  %13d  %13d%@", Self.control.padding(toLength: 42, withPad: " ", startingAt: 0),
                     control.runs, control.questions, control.afterUpgrade, 0,
                     counted ? "  (asked once after its upgrade, as it must be)" : "  <- the counter missed its question"))
        print("gnome-keyring: 0 questions for every program (no per-program access control to ask about)")
        print("target: at most 1 question per program, 0 after upgrades: \(met ? "met" : "NOT met")")
        if !met { throw ExitCode(1) }
    }

    /// Seahorse's reveal of one password: the item as Seahorse lists it, then its secret loaded
    /// as Item Properties does (`secret_item_load_secret`: one GetSecret, no retry, no Unlock).
    static let revealScript = """
        import sys
        import gi
        gi.require_version("Secret", "1")
        from gi.repository import Secret
        service = Secret.Service.get_sync(Secret.ServiceFlags.OPEN_SESSION, None)
        items = service.search_sync(None, {"site": sys.argv[1]}, Secret.SearchFlags.ALL, None)
        items[0].load_secret_sync(None)
        value = items[0].get_secret()
        print(value.get_text() if value else "")

        """

    /// The "python keyring script": stores its own key, or reads the mail token secret-tool stored.
    static let keyringScript = """
        import sys
        import keyring
        if sys.argv[1] == "store":
            keyring.set_password("notes", "me", sys.stdin.read())
        else:
            print(keyring.get_password("mail", "me") or "")

        """
}

/// The day's programs on the world's bus, each question counted by the prompter.
private struct Day {
    let world: ActivatedDaemonWorld
    let prompter: CountingPrompter

    /// Runs `body` and returns how many questions it caused.
    func asked(_ body: () throws -> Void) throws -> Int {
        let before = prompter.questions()
        try body()
        return prompter.questions() - before
    }

    func check(_ command: [String], input: String? = nil) throws {
        let result = try CLIBenchWorld.run(command, input: input, environment: world.environment)
        guard result.status == 0 else { throw BenchmarkFailure("\(command.joined(separator: " ")): \(result)") }
    }

    func expect(_ command: [String], _ secret: String) throws {
        let result = try CLIBenchWorld.run(command, environment: world.environment)
        guard result.status == 0, result.output.trimmingCharacters(in: .newlines) == secret else {
            throw BenchmarkFailure("\(command.joined(separator: " ")) did not get its secret (denied?): \(result)")
        }
    }

    func store(_ tool: String, service: String, secret: String) throws {
        try check([tool, "store", "--label=\(service)", "service", service, "username", "me"], input: secret)
    }

    func lookup(_ tool: String, _ attributes: [String], expect secret: String) throws {
        try expect([tool, "lookup"] + attributes, secret)
    }

    /// A headless launch that loads a page and quits; Chromium keeps its key through libsecret
    /// (as root it needs --no-sandbox). Bounded: a hung browser fails the run.
    func launchChromium(profile: String) throws {
        try check(["/usr/bin/timeout", "120", QuestionBenchmark.chromium, "--headless=new", "--no-sandbox",
                   "--password-store=gnome-libsecret", "--user-data-dir=\(profile)", "--dump-dom", "about:blank"])
    }

    /// How many Safe Storage keys the login keychain holds (attributes only: no question).
    func chromiumKeys(cli: String) throws -> Int {
        let result = try CLIBenchWorld.run([cli, "dump-keychain", "login"], environment: world.environment)
        guard result.status == 0 else { throw BenchmarkFailure("keywell dump-keychain: \(result)") }
        return result.output.components(separatedBy: "\"\(QuestionBenchmark.chromiumItem)\"").count - 1
    }

    /// As after a reboot: keywelld stops, the bus starts it again, `login` is unlocked with its password.
    func restartDaemon(cli: String) throws {
        if let pid = try world.daemonPID() {
            kill(pid, SIGTERM)
            let deadline = ContinuousClock.now + .seconds(10)
            while kill(pid, 0) == 0, ContinuousClock.now < deadline { usleep(50_000) }
        }
        try check([cli, "unlock-keychain", "login"], input: "\(QuestionBenchmark.password)\n")
    }
}

/// A pinentry that counts its CONFIRMs (access questions) in a file and answers each Always Allow.
private struct CountingPrompter {
    let path: String
    let count: String

    init(folder: String) throws {
        path = folder + "/counting-pinentry"
        count = folder + "/questions"
        let script = """
            #!/bin/sh
            echo "OK Pleased to meet you"
            while IFS= read -r line; do
              case "$line" in
                CONFIRM*) echo x >> '\(count)'; echo '\(QuestionBenchmark.alwaysAllow)' ;;
                GETPIN*) echo 'ERR \(PinentryErrorCode.cancelled) Operation cancelled <Pinentry>' ;;
                BYE*) echo 'OK closing connection'; exit 0 ;;
                *) echo OK ;;
              esac
            done

            """
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
    }

    func questions() -> Int {
        ((try? String(contentsOfFile: count, encoding: .utf8)) ?? "").split(separator: "\n").count
    }
}

/// Copies of a program in a root-owned folder under /opt (root's alone up to /), so only root
/// can replace them: what a package manager installs. An upgrade writes a new build beside the
/// program and renames it over, as dpkg does (docs/access-control.md, "Programs only root can replace").
private struct SystemPrograms {
    let top: String

    init(names: [String], copying program: String) throws {
        var template = Array("/opt/keywell-bench-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw BenchmarkFailure("cannot create a folder under /opt") }
        top = String(cString: made)
        chmod(top, 0o755)
        mkdir(top + "/bin", 0o755)
        for name in names {
            try FileManager.default.copyItem(atPath: program, toPath: path(name))
            chmod(path(name), 0o755)
        }
    }

    func path(_ name: String) -> String { "\(top)/bin/\(name)" }

    func upgrade(_ name: String) throws { try Self.upgrade(at: path(name)) }

    /// A new build: the same program with bytes after its end (ignored when it runs), another hash.
    static func upgrade(at path: String) throws {
        var build = try Data(contentsOf: URL(fileURLWithPath: path))
        build.append(contentsOf: Array("\0upgraded build".utf8))
        let next = path + ".dpkg-new"
        try build.write(to: URL(fileURLWithPath: next))
        chmod(next, 0o755)
        guard rename(next, path) == 0 else { throw BenchmarkFailure("cannot upgrade \(path)") }
    }

    func remove() { try? FileManager.default.removeItem(atPath: top) }
}

/// A program next to this one unless one is named.
private func locateSibling(_ name: String, given: String?) throws -> String {
    let path = given ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent(name).path
    guard FileManager.default.isExecutableFile(atPath: path) else { throw BenchmarkFailure("no \(name) at \(path); pass --\(name)") }
    return path
}
