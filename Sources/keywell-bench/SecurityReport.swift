import ArgumentParser
import Foundation

/// `keywell-bench security-report`: runs the hardening checks at modest sizes and prints the
/// markdown table that SECURITY.md carries. Exits non-zero when any figure misses its target.
struct SecurityReport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "security-report",
        abstract: "Load, kill -9, throttling, fuzzing, corrupt files, disk full, memory scan, bus monitor, other-user/PAM checks; prints SECURITY.md's figures table."
    )

    @Option(help: "The keywelld to check (default: the one next to this program).")
    var keywelld: String?

    @Option(help: "pam_keywell.so for the PAM rows (default: pam/build/pam_keywell.so under --repository).")
    var pamModule: String?

    @Option(help: "The source tree whose Tests/Integration holds the other-user and PAM stress tests.")
    var repository = "."

    @Option(help: "Seconds of load.")
    var loadSeconds = 10.0

    @Option(help: "SIGKILLs in the fault run.")
    var kills = 100

    @Option(help: "Seconds of fuzzing per libFuzzer target.")
    var fuzzSeconds = 30

    @Option(help: "Damaged keychain files to open.")
    var corruptFiles = 200

    @Option(help: "Run only the sections with these titles (repeatable; default: all).")
    var section: [String] = []

    func run() throws {
        let context = SecurityCheckContext(daemonPath: try locateKeywelld(keywelld), repository: repository,
                                           pamModule: pamModule ?? "\(repository)/pam/build/pam_keywell.so",
                                           loadSeconds: loadSeconds, kills: kills, fuzzSeconds: fuzzSeconds,
                                           corruptFiles: corruptFiles)
        var rows: [SecurityFigure] = []
        let chosen = SecurityReport.sections.filter { self.section.isEmpty || self.section.contains($0.title) }
        guard !chosen.isEmpty else {
            throw ValidationError("no such section; sections: \(SecurityReport.sections.map(\.title).joined(separator: ", "))")
        }
        for section in chosen {
            FileHandle.standardError.write(Data("security-report: \(section.title)…\n".utf8))
            let started = ContinuousClock.now
            do {
                rows += try section.figures(context)
            } catch {
                rows.append(SecurityFigure(check: section.title, figure: "did not run: \(error)", target: "runs", met: false))
            }
            FileHandle.standardError.write(Data(String(format: "security-report: %@ took %.0f s\n", section.title,
                                                       (ContinuousClock.now - started).seconds).utf8))
        }
        print(SecurityFigure.markdownTable(rows))
        if rows.contains(where: { !$0.met }) { throw ExitCode(1) }
    }

    /// The report's sections, in the order the table shows them.
    static let sections: [any SecurityReportSection] = [
        LoadSection(), FaultSection(), ThrottleSection(), FuzzingSection(), CorruptFileSection(), DiskFullSection(),
        MemoryScanSection(), PytestFiguresSection.busMonitor, PytestFiguresSection.otherUsersAndPAM,
        PytestFiguresSection.attacks,
    ]
}

struct SecurityCheckContext {
    var daemonPath: String
    var repository: String
    var pamModule: String
    var loadSeconds: Double
    var kills: Int
    var fuzzSeconds: Int
    var corruptFiles: Int
}

/// One part of the report: runs its checks and returns their rows.
protocol SecurityReportSection: Sendable {
    var title: String { get }
    func figures(_ context: SecurityCheckContext) throws -> [SecurityFigure]
}

/// One row of the table.
struct SecurityFigure: Codable {
    var check: String
    var figure: String
    var target: String
    var met: Bool

    static func markdownTable(_ rows: [SecurityFigure]) -> String {
        var lines = ["| check | figure | target | met |", "|---|---|---|---|"]
        for row in rows {
            let cells = [row.check, row.figure, row.target, row.met ? "yes" : "**NO**"]
            lines.append("| " + cells.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }
}

struct LoadSection: SecurityReportSection {
    let title = "load"
    func figures(_ context: SecurityCheckContext) throws -> [SecurityFigure] {
        let result = try LoadRun(daemonPath: context.daemonPath, clients: 16, seconds: context.loadSeconds, maxOps: 0).run()
        return [
            SecurityFigure(check: "16 concurrent clients (8 native, 8 Secret Service), \(Int(context.loadSeconds)) s",
                           figure: String(format: "%.0f ops/s, p50 %@ µs, p99 %@ µs", result.rate,
                                          formatMicroseconds(result.latencies.percentile(0.5)),
                                          formatMicroseconds(result.latencies.percentile(0.99))),
                           target: "reported", met: result.operations > 0),
            SecurityFigure(check: "load: errors", figure: "\(result.errors) in \(result.operations) ops", target: "0",
                           met: result.errors == 0),
            SecurityFigure(check: "load: acknowledged items lost or wrong after the run",
                           figure: "\(result.lost) of \(result.acknowledged)", target: "0", met: result.lost == 0),
        ]
    }
}

struct FaultSection: SecurityReportSection {
    let title = "faults"
    func figures(_ context: SecurityCheckContext) throws -> [SecurityFigure] {
        let result = try FaultRun(daemonPath: context.daemonPath, kills: context.kills, writers: 4).run()
        return [
            SecurityFigure(check: "kill -9 of keywelld during writes (4 writers, random 10–200 ms)",
                           figure: "\(result.kills) kills, \(result.restarts) restarts by D-Bus activation", target: "≥ 100 kills",
                           met: result.kills >= 100),
            SecurityFigure(check: "kill -9: acknowledged writes lost", figure: "\(result.lost) of \(result.acknowledged)",
                           target: "0", met: result.lost == 0 && result.errors == 0),
            SecurityFigure(check: "kill -9: `PRAGMA integrity_check` afterwards", figure: result.integrity, target: "ok",
                           met: result.integrity == "ok"),
            SecurityFigure(check: "kill -9: the daemon activated after the last crash serves", figure: result.servesAfter ? "yes" : "no",
                           target: "yes", met: result.servesAfter),
        ]
    }
}

struct ThrottleSection: SecurityReportSection {
    let title = "throttle"
    func figures(_ context: SecurityCheckContext) throws -> [SecurityFigure] {
        let paced = try ThrottleRun.paced(daemonPath: context.daemonPath, unitMilliseconds: 100)
        let greedy = try ThrottleRun.greedy(daemonPath: context.daemonPath, seconds: 10)
        return [
            SecurityFigure(check: "10 wrong Unlock passwords, waiting as told (first delay shortened to 0.1 s)",
                           figure: String(format: "%.2f s (delays %@)", paced.elapsed.seconds, paced.delaysNamed.joined(separator: ", ")),
                           target: String(format: "≥ %.2f s, the sum of the delays", paced.minimum.seconds),
                           met: paced.elapsed >= paced.minimum),
            SecurityFigure(check: "right password after the delay", figure: paced.rightPasswordWorks ? "unlocks" : "refused",
                           target: "unlocks", met: paced.rightPasswordWorks),
            SecurityFigure(check: "full-speed guesser for 10 s (real 1 s, 2 s, 4 s … delays)",
                           figure: String(format: "%d passwords checked of %d calls (without throttling: ~%.0f checks/s at the test KDF cost)", greedy.checked,
                                          greedy.calls, greedy.unthrottledPerSecond),
                           target: "≤ 8", met: greedy.passed),
        ]
    }
}

/// Checks that live in the integration tests, which write their figure rows to a JSON-lines
/// file: the Secret Service on the wire under dbus-monitor (test_secret_service.py), other users'
/// access (test_other_users.py) and PAM under stress (test_pam_stress.py).
struct PytestFiguresSection: SecurityReportSection {
    let title: String
    /// Test files or node ids under the repository; a name ending in `*` stands for every file of
    /// its folder that starts with what comes before the star.
    let tests: [String]
    let needsRoot: Bool
    /// The row saying the tests passed; without it a row appears only when they fail.
    let passCheck: String?

    static let busMonitor = PytestFiguresSection(
        title: "dbus-monitor (pytest)",
        tests: ["Tests/Integration/test_secret_service.py::test_dh_session_secrets_never_cross_the_bus_in_clear"],
        needsRoot: false, passCheck: nil)
    static let otherUsersAndPAM = PytestFiguresSection(
        title: "other users and PAM stress (pytest)",
        tests: ["Tests/Integration/test_other_users.py", "Tests/Integration/test_pam_stress.py"],
        needsRoot: true, passCheck: "other-user and PAM stress tests pass")
    /// Each attack an outside review reproduced, run again as it was run then: one file per attack
    /// (`test_attack_<topic>.py`), each recording its own rows.
    static let attacks = PytestFiguresSection(
        title: "attacks (pytest)",
        tests: ["Tests/Integration/test_attack_*"],
        needsRoot: true, passCheck: "every reproduced attack fails")

    func figures(_ context: SecurityCheckContext) throws -> [SecurityFigure] {
        guard !needsRoot || geteuid() == 0 else {
            return [SecurityFigure(check: title, figure: "skipped: needs root (throwaway users, PAM stacks)", target: "runs", met: false)]
        }
        let figuresFile = NSTemporaryDirectory() + "keywell-security-figures-\(getpid()).jsonl"
        try? FileManager.default.removeItem(atPath: figuresFile)
        defer { try? FileManager.default.removeItem(atPath: figuresFile) }
        var environment = ProcessInfo.processInfo.environment
        environment["KEYWELLD"] = context.daemonPath
        // The CLI the tests run is the one built beside that keywelld, as scripts/test.sh sets it.
        let binaries = (context.daemonPath as NSString).deletingLastPathComponent
        environment["KEYWELL_BIN_DIR"] = binaries
        environment["KEYWELL"] = "\(binaries)/keywell"
        environment["PAM_KEYWELL_SO"] = context.pamModule
        environment["KEYWELL_SECURITY_FIGURES"] = figuresFile
        // pytest's own output goes to stderr, so stdout stays the table.
        let paths = try tests.flatMap { try expand($0, in: context.repository) }
        let status = try ReportChild.run("/usr/bin/python3", ["-m", "pytest", "-q", "-p", "no:cacheprovider"] + paths,
                                         environment: environment)
        var rows: [SecurityFigure] = []
        let text = (try? String(contentsOfFile: figuresFile, encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") {
            if let row = try? JSONDecoder().decode(SecurityFigure.self, from: Data(line.utf8)) { rows.append(row) }
        }
        let passed = status == 0
        if let passCheck {
            rows.append(SecurityFigure(check: passCheck, figure: passed ? "all pass" : "failures (see pytest output)",
                                       target: "all pass", met: passed))
        } else if !passed || rows.isEmpty {
            rows.append(SecurityFigure(check: "\(title): the test passes", figure: "fails (see pytest output)", target: "passes", met: false))
        }
        return rows
    }

    /// The paths one entry of `tests` names, sorted; a pattern that matches nothing is an error, so a
    /// renamed file cannot quietly drop its rows from the table.
    private func expand(_ entry: String, in repository: String) throws -> [String] {
        guard entry.hasSuffix("*") else { return ["\(repository)/\(entry)"] }
        let pattern = (entry.dropLast() as Substring)
        let folder = (String(pattern) as NSString).deletingLastPathComponent
        let prefix = (String(pattern) as NSString).lastPathComponent
        let names = try FileManager.default.contentsOfDirectory(atPath: "\(repository)/\(folder)")
            .filter { $0.hasPrefix(prefix) && $0.hasSuffix(".py") }.sorted()
        guard !names.isEmpty else { throw ValidationError("no test file matches \(entry)") }
        return names.map { "\(repository)/\(folder)/\($0)" }
    }
}
