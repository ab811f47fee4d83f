import ArgumentParser
import Foundation
import KeywellProtocol

/// `keywell-bench startup`: what a user's shell and git pay, whole processes included, and what
/// keywelld keeps resident, beside the incumbent (docs/performance.md).
///
/// Part one runs, alternated round by round against ONE running keywelld on a private bus:
/// `keywell find-generic-password -s S -w`, `git credential fill` through
/// git-credential-keywell, `secret-tool lookup` and `dbus-send … Peer.Ping` (the floor any
/// process that makes one D-Bus call pays). Part two reads keywelld's and gnome-keyring-daemon's
/// RSS and PSS at the same steps in the same run.
struct StartupBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "startup",
        abstract: "Whole-process start-up (keywell, git's helper, secret-tool, dbus-send Ping) and daemon memory, with the targets."
    )

    @Option(help: "The keywell to measure (default: the one next to this program).")
    var keywell: String?

    @Option(help: "The keywelld it talks to (default: the one next to this program).")
    var keywelld: String?

    @Option(help: "A previous build's keywell, measured in the same alternated rounds (a git-credential-keywell file beside it is used as its git helper).")
    var baselineKeywell: String?

    @Option(help: "A previous build's keywelld, whose memory is read at the same steps in the same run.")
    var baselineKeywelld: String?

    @Option(help: "Alternated rounds (every command once per round).")
    var rounds = 20

    @Option(help: "Seconds to wait for the idle readings (keywelld trims after 10 s without a call).")
    var idleWait = 12

    @Option(help: "Items for the big-keychain step (filled through the engine's batch API).")
    var bigItems = 100_000

    @Option(help: "Items stored in gnome-keyring (it rewrites its whole file on every create, so 100,000 would take hours).")
    var gnomeItems = 1000

    @Flag(help: "Only the whole-process part.")
    var cliOnly = false

    @Flag(help: "Only the daemon memory part.")
    var memoryOnly = false

    func run() throws {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
        let keywellPath = keywell ?? folder + "/keywell"
        let daemonPath = keywelld ?? folder + "/keywelld"
        let required = [keywellPath, daemonPath, "/usr/bin/secret-tool", "/usr/bin/gnome-keyring-daemon", "/usr/bin/dbus-daemon",
                        "/usr/bin/dbus-send", "/usr/bin/git", "/usr/bin/time"] + [baselineKeywell, baselineKeywelld].compactMap { $0 }
        for path in required where !FileManager.default.isExecutableFile(atPath: path) {
            throw ValidationError("\(path) is missing (keywell: build it; the others: scripts/setup.sh)")
        }
        print("start-up benchmark on \(ProcessInfo.processInfo.activeProcessorCount) cores; private session buses")
        print("keywell: \(keywellPath)\nkeywelld: \(daemonPath)")
        if let baselineKeywell { print("baseline keywell: \(baselineKeywell)") }
        if let baselineKeywelld { print("baseline keywelld: \(baselineKeywelld)") }
        var verdicts: [TargetVerdict] = []
        if !memoryOnly {
            verdicts += try StartupProcessRounds(keywell: keywellPath, keywelld: daemonPath, baselineKeywell: baselineKeywell,
                                                 rounds: rounds).run()
        }
        if !cliOnly {
            verdicts += try DaemonMemorySteps(keywelld: daemonPath, baselineKeywelld: baselineKeywelld, idleWait: idleWait,
                                              bigItems: bigItems, gnomeItems: gnomeItems).run()
        }
        print("\ntargets (issue 19):")
        for verdict in verdicts { print(verdict.line) }
        let missed = verdicts.filter { !$0.met }.count
        print(missed == 0 ? "all \(verdicts.count) targets met" : "\(missed) of \(verdicts.count) targets NOT met")
    }
}

/// One target with its measured figure.
struct TargetVerdict {
    let name: String
    let figure: String
    let target: String
    let met: Bool

    /// A ratio held to `limit` (figure and target printed alike: `2.77 ×`, `≤ 2.0 ×`).
    static func ratio(_ name: String, _ value: Double, atMost limit: Double) -> TargetVerdict {
        TargetVerdict(name: name, figure: String(format: "%.2f ×", value), target: String(format: "≤ %.1f ×", limit),
                      met: value <= limit)
    }

    /// Memory in MiB held to `limit`; `signed` for a difference (`+2.8 MiB`).
    static func mebibytes(_ name: String, _ value: Double, atMost limit: Int, signed: Bool = false) -> TargetVerdict {
        TargetVerdict(name: name, figure: String(format: signed ? "%+.1f MiB" : "%.1f MiB", value), target: "≤ \(limit) MiB",
                      met: value <= Double(limit))
    }

    var line: String {
        "  \(name.padding(toLength: 58, withPad: " ", startingAt: 0)) \(figure.padding(toLength: 16, withPad: " ", startingAt: 0))"
            + " target \(target.padding(toLength: 14, withPad: " ", startingAt: 0)) \(met ? "met" : "NOT met")"
    }
}

/// Part one: every command once per round, the order rotating each round so that no command
/// always runs right after the same neighbour; medians of wall time, and peak memory from wait4.
struct StartupProcessRounds {
    let keywell: String
    let keywelld: String
    let baselineKeywell: String?
    let rounds: Int

    private struct Subject {
        let name: String
        let command: [String]
        let input: String?
        let environment: [String: String]?
        let expect: (String) -> Bool
        var times = LatencySamples()
        var peaks: [Int] = []
    }

    private static let findName = "keywell find-generic-password -s S -w"
    private static let gitName = "git credential fill (helper by full path)"
    private static let secretToolName = "secret-tool lookup service S (keywelld)"
    private static let pingName = "dbus-send Peer.Ping to keywelld (the floor)"
    private static let baselineFindName = "baseline: keywell find-generic-password -w"
    private static let baselineGitName = "baseline: git credential fill (full path)"

    func run() throws -> [TargetVerdict] {
        let world = try CLIBenchWorld(
            name: "startup", activating: [KeywellNames.busName: keywelld, KeywellNames.secretsBusName: keywelld],
            extraEnvironment: ["GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0"])
        defer { world.stop() }
        let current = try world.helperFolder("bin", keywell: keywell)
        let baseline = try baselineKeywell.map { try world.helperFolder("bin-baseline", keywell: $0) }
        try world.check(current.keywell, ["create-keychain", "-p", "bench-password", "login"])
        // Items trust the program that made them; a baseline build is another program, so it is
        // named in their lists too (docs/access-control.md), and git's item is made the same way.
        let trusted = ([current.keywell] + [baseline?.keywell].compactMap { $0 }).flatMap { ["-T", $0] }
        try world.check(current.keywell, ["add-generic-password", "-a", "bench", "-s", "S", "-w", "bench-secret"] + trusted)
        try world.check("/usr/bin/secret-tool", ["store", "--label=S", "service", "S"], input: "bench-secret")
        if baseline == nil {
            try world.check("/usr/bin/git", ["-c", "credential.helper=keywell", "credential", "approve"],
                            input: "url=https://git.example.com\nusername=alice\npassword=s3cret\n\n", environment: current.environment)
        } else {
            // git's helpers are programs of their own, so both builds' helpers are named as well.
            let helpers = [current.helper, baseline!.helper].flatMap { ["-T", $0] }
            try world.check(current.keywell, ["add-internet-password", "-a", "alice", "-s", "git.example.com", "-r", "htps",
                                              "-w", "s3cret"] + trusted + helpers)
        }
        let gitFill = ["/usr/bin/git", "-c", "credential.helper=keywell", "credential", "fill"]
        let gitRequest = "url=https://git.example.com\n\n"
        let gitAnswered = { (output: String) in output.contains("\npassword=s3cret\n") }

        var subjects = [
            Subject(name: Self.findName, command: [current.keywell, "find-generic-password", "-s", "S", "-w"],
                    input: nil, environment: nil, expect: { $0 == "bench-secret\n" }),
            // As docs/cli.md configures it: the helper by absolute path, which git's shell execs
            // directly (git has no way to run a helper without a shell).
            Subject(name: Self.gitName,
                    command: ["/usr/bin/git", "-c", "credential.helper=\(current.helper)", "credential", "fill"],
                    input: gitRequest, environment: current.environment, expect: gitAnswered),
            // By name: git runs `git credential-keywell get` through the shell, a second git.
            Subject(name: "git credential fill (credential.helper=keywell)", command: gitFill, input: gitRequest,
                    environment: current.environment, expect: gitAnswered),
            // git itself and the shell it runs a helper through, with a helper that is a shell builtin.
            Subject(name: "git credential fill, builtin helper (git's floor)",
                    command: ["/usr/bin/git", "-c", "credential.helper=!f() { echo username=alice; echo password=s3cret; }; f", "credential", "fill"],
                    input: gitRequest, environment: current.environment, expect: gitAnswered),
            // The floor of any helper that asks the bus: git, its shell, and a C program making
            // one D-Bus call (dbus-send's Ping to keywelld) before the answer is printed.
            Subject(name: "git credential fill, helper = one dbus-send Ping",
                    command: ["/usr/bin/git", "-c", "credential.helper=!f() { /usr/bin/dbus-send --session --print-reply "
                                + "--dest=\(KeywellNames.busName) \(KeywellNames.objectPath) org.freedesktop.DBus.Peer.Ping >/dev/null; "
                                + "echo username=alice; echo password=s3cret; }; f", "credential", "fill"],
                    input: gitRequest, environment: current.environment, expect: gitAnswered),
            Subject(name: Self.secretToolName, command: ["/usr/bin/secret-tool", "lookup", "service", "S"],
                    input: nil, environment: nil, expect: { $0 == "bench-secret" }),
            Subject(name: Self.pingName,
                    command: ["/usr/bin/dbus-send", "--session", "--print-reply", "--dest=\(KeywellNames.busName)",
                              KeywellNames.objectPath, "org.freedesktop.DBus.Peer.Ping"],
                    input: nil, environment: nil, expect: { $0.hasPrefix("method return") }),
            // The CLI's own start and exit, no D-Bus at all: what is left of `find` once its
            // round trip is gone.
            Subject(name: "keywell help (start-up alone, no D-Bus)", command: [current.keywell, "help"],
                    input: nil, environment: nil, expect: { $0.contains("find-generic-password") }),
        ]
        if let baseline {
            subjects += [
                Subject(name: Self.baselineFindName, command: [baseline.keywell, "find-generic-password", "-s", "S", "-w"],
                        input: nil, environment: nil, expect: { $0 == "bench-secret\n" }),
                Subject(name: Self.baselineGitName,
                        command: ["/usr/bin/git", "-c", "credential.helper=\(baseline.helper)", "credential", "fill"],
                        input: gitRequest, environment: baseline.environment, expect: gitAnswered),
            ]
        }
        // Every command answers correctly, and everything is warm (daemon, page cache), first.
        for _ in 0..<3 {
            for subject in subjects {
                let result = try world.run(subject.command, input: subject.input, environment: subject.environment)
                guard result.status == 0, subject.expect(result.output) else {
                    throw BenchmarkFailure("\(subject.name) answered \(result)")
                }
            }
        }
        for round in 0..<rounds {
            for offset in 0..<subjects.count {
                let index = (round + offset) % subjects.count
                let result = try world.run(subjects[index].command, input: subjects[index].input, environment: subjects[index].environment)
                guard result.status == 0 else { throw BenchmarkFailure("\(subjects[index].name) answered \(result)") }
                subjects[index].times.append(result.duration)
            }
        }
        // Peak memory in rounds of its own, each run under GNU time: wait4's ru_maxrss for a
        // child this process spawns would include this process's own peak (Linux carries the
        // high-water mark of the memory a child had before exec over into it).
        for _ in 0..<5 {
            for index in subjects.indices {
                subjects[index].peaks.append(try peakKiB(world, subjects[index]))
            }
        }

        // Subjects by name, so that a row added to the list above moves no figure.
        func median(_ name: String) -> Double {
            subjects.first { $0.name == name }?.times.percentile(0.5).seconds ?? .nan
        }
        let ping = median(Self.pingName)
        print("\nwhole processes, \(rounds) rounds alternated, one keywelld (wall ms; peak memory: GNU time's maximum RSS over 5 runs, MiB)")
        print("command".padding(toLength: 46, withPad: " ", startingAt: 0) + " median    p10    p90  × Ping   peak MiB (median / max)")
        for subject in subjects {
            let times = subject.times
            let peaks = subject.peaks.sorted()
            print(subject.name.padding(toLength: 46, withPad: " ", startingAt: 0)
                  + String(format: " %6.2f %6.2f %6.2f %6.2f   %5.1f / %5.1f", times.percentile(0.5).seconds * 1000,
                           times.percentile(0.1).seconds * 1000, times.percentile(0.9).seconds * 1000,
                           times.percentile(0.5).seconds / ping, Double(peaks[peaks.count / 2]) / 1024,
                           Double(peaks.last ?? 0) / 1024))
        }
        let find = subjects[0]
        let findRatio = median(Self.findName) / ping
        let toolRatio = median(Self.findName) / median(Self.secretToolName)
        let peak = Double(find.peaks.sorted()[find.peaks.count / 2]) / 1024
        let gitRatio = median(Self.gitName) / ping
        var verdicts: [TargetVerdict] = [
            .ratio("keywell find-generic-password -w wall / Ping", findRatio, atMost: 2.0),
            .ratio("keywell find-generic-password -w wall / secret-tool lookup", toolRatio, atMost: 0.5),
            .mebibytes("keywell find-generic-password -w peak memory", peak, atMost: 12),
            .ratio("git credential fill through the helper (full path) / Ping", gitRatio, atMost: 2.5),
        ]
        if baselineKeywell != nil {
            let before = median(Self.baselineFindName), gitBefore = median(Self.baselineGitName)
            print(String(format: "this build / baseline: find-generic-password %.2f, git credential fill %.2f",
                         median(Self.findName) / before, median(Self.gitName) / gitBefore))
            verdicts.append(.ratio("find-generic-password -w: this build / baseline", median(Self.findName) / before, atMost: 1.0))
        }
        return verdicts
    }

    /// The peak RSS of one run (the process and every descendant it waited for), in KiB, as
    /// GNU time reports it from wait4 in a process of its own.
    private func peakKiB(_ world: CLIBenchWorld, _ subject: Subject) throws -> Int {
        let report = world.root + "/peak"
        let result = try world.run(["/usr/bin/time", "-f", "%M", "-o", report] + subject.command, input: subject.input,
                                   environment: subject.environment)
        guard result.status == 0, let text = try? String(contentsOfFile: report, encoding: .utf8),
              let kib = text.split(separator: "\n").last.flatMap({ Int($0) }) else {
            throw BenchmarkFailure("\(subject.name) under /usr/bin/time: \(result)")
        }
        return kib
    }
}
