import ArgumentParser
import Foundation

/// `keywell-bench security-report`: runs the hardening checks at modest sizes and prints the
/// markdown table that SECURITY.md carries. Exits non-zero when any figure misses its target.
struct SecurityReport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "security-report",
        abstract: "Load, kill -9, throttling and other-user/PAM checks; prints SECURITY.md's figures table."
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

    func run() throws {
        let context = SecurityCheckContext(daemonPath: try locateKeywelld(keywelld), repository: repository,
                                           pamModule: pamModule ?? "\(repository)/pam/build/pam_keywell.so",
                                           loadSeconds: loadSeconds, kills: kills)
        var rows: [SecurityFigure] = []
        for section in SecurityReport.sections {
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

    /// The report's sections, in the order the table shows them. The fuzzing, corrupt-file,
    /// disk-full and memory-scan checks (part A of the hardening work) add their sections here.
    static let sections: [any SecurityReportSection] = [
        LoadSection(), FaultSection(), ThrottleSection(), IntegrationTestSection(),
    ]
}

struct SecurityCheckContext {
    var daemonPath: String
    var repository: String
    var pamModule: String
    var loadSeconds: Double
    var kills: Int
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

/// The checks that need root and real users: other users' access (test_other_users.py) and PAM
/// under stress (test_pam_stress.py). Each test writes its figure rows to a JSON-lines file.
struct IntegrationTestSection: SecurityReportSection {
    let title = "other users and PAM stress (pytest)"
    static let files = ["Tests/Integration/test_other_users.py", "Tests/Integration/test_pam_stress.py"]

    func figures(_ context: SecurityCheckContext) throws -> [SecurityFigure] {
        guard geteuid() == 0 else {
            return [SecurityFigure(check: title, figure: "skipped: needs root (throwaway users, PAM stacks)", target: "runs", met: false)]
        }
        let figuresFile = NSTemporaryDirectory() + "keywell-security-figures-\(getpid()).jsonl"
        defer { try? FileManager.default.removeItem(atPath: figuresFile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-m", "pytest", "-q", "-p", "no:cacheprovider"] + Self.files.map { "\(context.repository)/\($0)" }
        var environment = ProcessInfo.processInfo.environment
        environment["KEYWELLD"] = context.daemonPath
        environment["PAM_KEYWELL_SO"] = context.pamModule
        environment["KEYWELL_SECURITY_FIGURES"] = figuresFile
        process.environment = environment
        // pytest's own output goes to stderr, so stdout stays the table.
        process.standardOutput = FileHandle.standardError
        try process.run()
        process.waitUntilExit()
        var rows: [SecurityFigure] = []
        let text = (try? String(contentsOfFile: figuresFile, encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") {
            if let row = try? JSONDecoder().decode(SecurityFigure.self, from: Data(line.utf8)) { rows.append(row) }
        }
        rows.append(SecurityFigure(check: "other-user and PAM stress tests pass", figure: process.terminationStatus == 0 ? "all pass" : "failures (see pytest output)",
                                   target: "all pass", met: process.terminationStatus == 0))
        return rows
    }
}
