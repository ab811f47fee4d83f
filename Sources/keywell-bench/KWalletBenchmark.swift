import ArgumentParser
import Foundation
import KeywellDBus
import KeywellProtocol

/// `keywell-bench kwallet`: `readPassword`'s round trip through KWallet's API, keywelld against
/// KDE's own kwalletd5, each on its own private bus in a scratch home, calls alternated between
/// the two so that the machine's other load falls on both alike (docs/kwallet.md).
///
/// kwalletd5 runs without a display (QT_QPA_PLATFORM=offscreen): `pamOpen` with any 56-byte hash
/// makes and opens its wallet with no dialog, after which `open` needs none.
struct KWalletBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kwallet",
        abstract: "KWallet API (org.kde.kwalletd5): readPassword round trip, keywelld against kwalletd5, alternated."
    )

    @Option(help: "The keywelld to measure (default: the one next to this program).")
    var keywelld: String?

    @Option(help: "The kwalletd5 to compare with.")
    var kwalletd = "/usr/bin/kwalletd5"

    @Option(help: "Timed readPassword calls per daemon.")
    var calls = 5000

    static let app = "keywell-bench"

    func run() throws {
        let daemonPath = keywelld ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("keywelld").path
        guard FileManager.default.isExecutableFile(atPath: daemonPath) else { throw ValidationError("no keywelld at \(daemonPath)") }
        guard FileManager.default.isExecutableFile(atPath: kwalletd) else {
            throw ValidationError("no kwalletd5 at \(kwalletd) (Debian: libkf5wallet-bin)")
        }

        let ours = try DaemonBenchmarkWorld()
        let pid = try ours.startDaemon(daemonPath)
        defer { ours.stopDaemon(pid) }
        let ourClient = try ours.connect()
        defer { ourClient.close() }
        try Self.waitForName(KeywellNames.busName, on: ourClient)
        _ = try NativeCalls.call(ourClient, .createKeychain, [.string("login"), .bytes(Array("bench".utf8))])

        let theirs = try DaemonBenchmarkWorld()
        var environment = theirs.environment
        environment["QT_QPA_PLATFORM"] = "offscreen"
        let theirPID = try Spawn.start(kwalletd, [], environment: environment, captureOutput: false).pid
        defer { theirs.stopDaemon(theirPID) }
        let theirClient = try theirs.connect()
        defer { theirClient.close() }
        try Self.waitForName(KWalletProtocol.busNames[0], on: theirClient)
        _ = try Self.call(theirClient, "pamOpen", [.string(KWalletProtocol.defaultWallet), .bytes(Array(repeating: 0x6B, count: 56)), .int32(0)])

        var handles: [Int32] = []
        for client in [ourClient, theirClient] {
            guard let handle = try Self.call(client, "open", [.string(KWalletProtocol.defaultWallet), .int64(0), .string(Self.app)])
                .first?.int32Value, handle > 0 else { throw BenchmarkFailure("open gave no handle") }
            _ = try Self.call(client, "writePassword", [.int32(handle), "Bench", "entry", "password-0123456789abcdef", .string(Self.app)])
            handles.append(handle)
        }

        print("KWallet API benchmark: readPassword round trip, one client, private dbus-daemon per daemon, alternated")
        print("keywelld: \(daemonPath) (fast KDF); kwalletd5: \(kwalletd)")
        print("load average before: \(Self.loadAverage)")
        var samples = [LatencySamples(), LatencySamples()]
        let clients = [ourClient, theirClient]
        let warmUp = 100
        // Each daemon's own CPU (all its threads) over the timed calls: both serve nothing else.
        var cpuBefore: [UInt64?] = [nil, nil]
        for round in 0..<(calls + warmUp) {
            if round == warmUp { cpuBefore = [pid, theirPID].map(cpuNanoseconds(of:)) }
            for index in [round % 2, 1 - round % 2] {
                let start = ContinuousClock.now
                let answer = try Self.call(clients[index], "readPassword", [.int32(handles[index]), "Bench", "entry", .string(Self.app)])
                let elapsed = ContinuousClock.now - start
                guard answer.first?.stringValue == "password-0123456789abcdef" else { throw BenchmarkFailure("wrong password read") }
                if round >= warmUp { samples[index].append(elapsed) }
            }
        }
        let cpuAfter = [pid, theirPID].map(cpuNanoseconds(of:))
        print("load average after: \(Self.loadAverage)")
        print("| daemon | readPassword p50 / p90 / p99 (µs) | calls/s | daemon CPU per call (µs) |")
        print("|---|---|---|---|")
        for (index, name) in ["keywelld", "kwalletd5"].enumerated() {
            let sample = samples[index]
            var cpu = "?"
            if let before = cpuBefore[index], let after = cpuAfter[index], after >= before, calls > 0 {
                cpu = formatMicroseconds(.nanoseconds(Int64(after - before) / Int64(calls)))
            }
            let percentiles = [0.5, 0.9, 0.99].map { formatMicroseconds(sample.percentile($0)) }.joined(separator: " / ")
            print("| \(name) | \(percentiles) | \(String(format: "%.0f", sample.operationsPerSecond)) | \(cpu) |")
        }
        let ratio = samples[0].percentile(0.5).seconds / max(samples[1].percentile(0.5).seconds, 1e-9)
        print(String(format: "keywelld / kwalletd5 at p50: %.2f (target: below 1)", ratio) + (ratio < 1 ? "" : " MISSED"))
        if ratio >= 1 { throw ExitCode(1) }
    }

    /// The machine's other work, which falls on both daemons alike but lengthens every round trip.
    static var loadAverage: String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
    }

    static func call(_ client: DBusConnection, _ member: String, _ arguments: [DBusValue]) throws -> [DBusValue] {
        try client.call(destination: KWalletProtocol.busNames[0], path: KWalletProtocol.objectPaths[0],
                        interface: KWalletProtocol.interface, member: member, arguments: arguments)
    }

    static func waitForName(_ name: String, on client: DBusConnection) throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while try !client.nameHasOwner(name) {
            guard ContinuousClock.now < deadline else { throw BenchmarkFailure("nobody took \(name)") }
            usleep(10_000)
        }
    }
}
