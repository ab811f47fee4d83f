import ArgumentParser
import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// `keywell-bench load`: many clients at once, half native API, half Secret Service, then a
/// check from a fresh connection that every acknowledged write is there and correct.
struct LoadBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Concurrent clients (native + Secret Service) against an activated keywelld; checks no acknowledged write is lost."
    )

    @Option(help: "The keywelld to drive (default: the one next to this program).")
    var keywelld: String?

    @Option(help: "Concurrent clients, each on its own connection; half native, half Secret Service.")
    var clients = 16

    @Option(help: "Stop after this many seconds.")
    var seconds = 20.0

    @Option(help: "Stop after this many operations in all (0: no limit).")
    var maxOps = 0

    func run() throws {
        let result = try LoadRun(daemonPath: try locateKeywelld(keywelld), clients: clients, seconds: seconds, maxOps: maxOps).run()
        print(result.summary)
        for text in result.firstErrors { print("  error: \(text)") }
        if result.errors > 0 || result.lost > 0 { throw ExitCode(1) }
    }
}

struct LoadResult {
    var clients: Int
    var operations: Int
    var wall: Duration
    var latencies: LatencySamples
    var errors: Int
    var acknowledged: Int
    var lost: Int
    var firstErrors: [String]

    var rate: Double { Double(operations) / wall.seconds }

    var summary: String {
        String(format: "load: %d clients, %d ops in %.1f s = %.0f ops/s; p50 %@ µs, p99 %@ µs; errors %d; acknowledged items %d, lost %d",
               clients, operations, wall.seconds, rate, formatMicroseconds(latencies.percentile(0.5)),
               formatMicroseconds(latencies.percentile(0.99)), errors, acknowledged, lost)
    }
}

struct LoadRun {
    static let keychain = "load"
    static let password = Array("load password".utf8)
    let daemonPath: String
    let clients: Int
    let seconds: Double
    let maxOps: Int

    func run() throws -> LoadResult {
        let world = try ActivatedDaemonWorld(daemonPath: daemonPath)
        let setup = try world.connect()
        defer { setup.close() }
        // The first call starts keywelld through activation.
        _ = try NativeCalls.call(setup, .createKeychain, [.string(Self.keychain), .bytes(Self.password)])
        _ = try NativeCalls.call(setup, .setDefaultKeychain, [.string(Self.keychain)])
        _ = try NativeCalls.call(setup, .setSearchList, [.stringArray([Self.keychain])])

        let ledger = AcknowledgedLedger()
        let connections = try (0..<clients).map { _ in try world.connect() }
        defer { connections.forEach { $0.close() } }
        var loadClients: [any LoadClient] = []
        for (index, connection) in connections.enumerated() {
            if index % 2 == 0 {
                loadClients.append(NativeLoadClient(connection: connection, client: index, keychain: Self.keychain, ledger: ledger))
            } else {
                loadClients.append(try SecretServiceLoadClient(connection: connection, client: index, keychain: Self.keychain, ledger: ledger))
            }
        }
        let boxes = loadClients.map { ClientBox($0) }
        let perClientLimit = maxOps > 0 ? max(1, maxOps / clients) : Int.max
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let samples = SampleSink(count: clients)
        let start = ContinuousClock.now
        ClientThreads.run(count: clients) { index in
            var local: [Duration] = []
            var n = 0
            while n < perClientLimit, ContinuousClock.now < deadline {
                let begin = ContinuousClock.now
                do {
                    try boxes[index].client.operate(n)
                } catch {
                    ledger.error("client \(index) op \(n): \(error)")
                }
                local.append(ContinuousClock.now - begin)
                n += 1
            }
            samples.store(local, at: index)
        }
        let wall = ContinuousClock.now - start

        let errors = ledger.errorCount
        let verifier = try world.connect()
        defer { verifier.close() }
        let lost = try Self.verify(ledger, on: verifier, keychain: Self.keychain)
        let all = samples.all
        return LoadResult(clients: clients, operations: all.count, wall: wall, latencies: LatencySamples(all),
                          errors: errors, acknowledged: ledger.entries.count, lost: lost, firstErrors: ledger.firstErrors)
    }

    /// Asks for every ledger entry on a fresh connection; returns how many are missing or wrong
    /// (a deleted item that came back counts too).
    static func verify(_ ledger: AcknowledgedLedger, on connection: DBusConnection, keychain: String) throws -> Int {
        var service: SecretServiceClient?
        var lost = 0
        for (key, expected) in ledger.entries {
            let found: [UInt8]?
            switch key.face {
            case .native:
                found = try NativeLoadClient.readSecret(connection, key.name, keychain)
            case .secretService:
                if service == nil { service = try SecretServiceClient(connection) }
                found = try SecretServiceLoadClient.readSecret(service!, key.name)
            }
            if found != expected {
                lost += 1
                let text = { (value: [UInt8]?) in value.map { String(decoding: $0, as: UTF8.self) } ?? "no item" }
                ledger.error("lost: " + "\(key.name): expected \(text(expected)), found \(text(found))")
            }
        }
        return lost
    }
}

/// Lets each thread mutate its own client.
// @unchecked: each box belongs to one load thread, which alone reads and replaces its client.
private final class ClientBox: @unchecked Sendable {
    var client: any LoadClient
    init(_ client: any LoadClient) { self.client = client }
}

/// Per-thread latency lists, joined at the end.
final class SampleSink: Sendable {
    private let perThread: Protected<[[Duration]]>

    init(count: Int) { perThread = Protected(Array(repeating: [], count: count)) }

    func store(_ samples: [Duration], at index: Int) { perThread.withLock { $0[index] = samples } }
    var all: [Duration] { perThread.withLock { $0.flatMap { $0 } } }
}
