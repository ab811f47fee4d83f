import ArgumentParser
import Foundation
import KeywellProtocol

/// `keywell-bench cli`: what a script pays for one secret, whole process included.
/// `keywell find-generic-password -s S -w` against a running keywelld, beside
/// `secret-tool lookup service S` against a running gnome-keyring on the same machine, each
/// on its own private session bus. Every run is a new process (cold process, warm daemon);
/// the two tools alternate so that machine noise hits both alike.
struct CLIBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cli",
        abstract: "Whole-process keywell find-generic-password -w beside secret-tool lookup (gnome-keyring)."
    )

    @Option(help: "The keywell to measure (default: the one next to this program).")
    var keywell: String?

    @Option(help: "The keywelld it talks to (default: the one next to this program).")
    var keywelld: String?

    @Option(help: "Timed runs of each tool.")
    var runs = 50

    func run() throws {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
        let keywellPath = keywell ?? folder + "/keywell"
        let daemonPath = keywelld ?? folder + "/keywelld"
        for path in [keywellPath, daemonPath, "/usr/bin/secret-tool", "/usr/bin/gnome-keyring-daemon", "/usr/bin/dbus-daemon"]
        where !FileManager.default.isExecutableFile(atPath: path) {
            throw ValidationError("\(path) is missing (keywell: build it; the others: scripts/setup.sh)")
        }
        print("CLI benchmark: \(runs) runs each, new process per run, daemons already running, private buses")
        print("keywell: \(keywellPath)")

        let keywellWorld = try CLIBenchWorld(name: "keywell", activating: [KeywellNames.busName: daemonPath])
        defer { keywellWorld.stop() }
        try keywellWorld.check(keywellPath, ["create-keychain", "-p", "bench-password", "login"])
        try keywellWorld.check(keywellPath, ["add-generic-password", "-a", "bench", "-s", "S", "-w", "bench-secret"])
        let keywellLookup = [keywellPath, "find-generic-password", "-s", "S", "-w"]

        let gnomeWorld = try CLIBenchWorld(name: "gnome-keyring", activating: [:])
        defer { gnomeWorld.stop() }
        // --unlock reads a password on stdin and creates (or unlocks) the login keyring, so no
        // prompt is ever needed; --foreground keeps it our child.
        try gnomeWorld.startBackground("/usr/bin/gnome-keyring-daemon", ["--unlock", "--foreground", "--components=secrets"],
                                       input: "bench-password")
        try gnomeWorld.waitForName("org.freedesktop.secrets")
        try gnomeWorld.check("/usr/bin/secret-tool", ["store", "--label=S", "service", "S"], input: "bench-secret")
        let secretToolLookup = ["/usr/bin/secret-tool", "lookup", "service", "S"]

        // Both answer correctly before anything is timed (and both daemons are warm).
        let keywellAnswer = try keywellWorld.run(keywellLookup)
        let secretToolAnswer = try gnomeWorld.run(secretToolLookup)
        guard keywellAnswer.output == "bench-secret\n", keywellAnswer.status == 0 else {
            throw BenchmarkFailure("keywell answered \(keywellAnswer)")
        }
        guard secretToolAnswer.output == "bench-secret", secretToolAnswer.status == 0 else {
            throw BenchmarkFailure("secret-tool answered \(secretToolAnswer)")
        }
        for _ in 0..<3 { _ = try keywellWorld.run(keywellLookup); _ = try gnomeWorld.run(secretToolLookup) }

        var keywellTimes = LatencySamples(), secretToolTimes = LatencySamples()
        for _ in 0..<runs {
            keywellTimes.append(try keywellWorld.run(keywellLookup).duration)
            secretToolTimes.append(try gnomeWorld.run(secretToolLookup).duration)
        }
        func row(_ name: String, _ samples: LatencySamples) -> String {
            func ms(_ fraction: Double) -> String { String(format: "%7.2f", samples.percentile(fraction).seconds * 1000) }
            return "\(name.padding(toLength: 44, withPad: " ", startingAt: 0)) \(ms(0.5)) \(ms(0.1)) \(ms(0.9)) \(ms(0))"
        }
        print("\("command".padding(toLength: 44, withPad: " ", startingAt: 0))  median     p10     p90     min  (ms)")
        print(row("keywell find-generic-password -s S -w", keywellTimes))
        print(row("secret-tool lookup service S (gnome-keyring)", secretToolTimes))
        let ratio = keywellTimes.percentile(0.5).seconds / secretToolTimes.percentile(0.5).seconds
        print(String(format: "keywell median / secret-tool median = %.2f (target: at most 1.00)", ratio))
    }
}
