import ArgumentParser
import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// `keywell-bench daemon`: keywelld on a private dbus-daemon, measured from real clients.
struct DaemonBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "keywelld over D-Bus: call latency and throughput (1 and 8 clients), start time, memory."
    )

    @Option(help: "The keywelld to measure (default: the one next to this program).")
    var keywelld: String?

    @Option(help: "Timed calls per client for each kind of call.")
    var calls = 400

    @Option(help: "Starts timed for the start-up median.")
    var starts = 20

    @Option(help: "Item counts for the add-stays-flat check, comma-separated (filled in-process, in batches).")
    var sizes = "1000,10000,100000"

    @Option(help: "Append the measured keywelld's verbose log to this file (slows it down a little).")
    var daemonLog: String?

    @Option(help: "Seconds to wait for the idle memory readings (keywelld gives memory back after 10 s idle).")
    var idleWait = 12

    @Option(help: "Only the latency targets (CopyMatching and Add alternated with Ping at 1,000 items), this many times.")
    var targetsOnly: Int?

    @Option(name: .customLong("rows"), help: "Only the latency rows whose name contains this text (no targets, no growing keychain): to repeat one row.")
    var rowFilter: String?

    func run() throws {
        let daemonPath = keywelld ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("keywelld").path
        guard FileManager.default.isExecutableFile(atPath: daemonPath) else {
            throw ValidationError("no keywelld at \(daemonPath); pass --keywelld")
        }
        let sizes = self.sizes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.sorted()
        print("keywelld benchmark: \(daemonPath)")
        print("\(ProcessInfo.processInfo.activeProcessorCount) cores; private dbus-daemon; fast KDF (the calls are measured, not Argon2id)")

        let world = try DaemonBenchmarkWorld()
        if let rounds = targetsOnly { return try measureTargets(world, daemonPath, rounds: rounds) }
        let startUp = try measureStarts(world, daemonPath)
        if starts > 0 {
            print(String(format: "start, exec to owning org.keywell.Keychain: median %.1f ms, min %.1f, max %.1f (%d starts)",
                         startUp.percentile(0.5).seconds * 1000, startUp.percentile(0).seconds * 1000,
                         startUp.percentile(1).seconds * 1000, startUp.durations.count))
        }

        let pid = try world.startDaemon(daemonPath, log: daemonLog)
        defer { world.stopDaemon(pid) }
        let clients = try (0..<8).map { _ in try world.connect() }
        defer { clients.forEach { $0.close() } }
        try waitForName(clients[0])
        _ = try NativeCalls.call(clients[0], .listKeychains, [])
        sleep(UInt32(idleWait))
        let startedKiB = residentKiB(of: pid)
        let startedAnonKiB = residentKiB(of: pid, field: "RssAnon:")

        _ = try NativeCalls.call(clients[0], .createKeychain, ["bench", .bytes(Array("bench".utf8))])
        _ = try NativeCalls.call(clients[0], .setDefaultKeychain, ["bench"])
        _ = try NativeCalls.call(clients[0], .setSearchList, [.stringArray(["bench"])])
        let filler = try Filler(environment: world.environment)
        try filler.fill(to: sizes.first ?? 1000)

        let floor = LatencySamples(try StorageProbe.durableInsertLatencies(in: URL(fileURLWithPath: world.root), rowBytes: 256, count: 300))
        let load = DaemonLoad(clients: clients)
        var rows: [(String, [DaemonLoad.Result])] = []
        let itemCount = filler.count
        let clientCounts = [1, 8]
        func measure(_ name: String, calls: Int, _ body: @escaping @Sendable (DBusConnection, Int, Int) throws -> Void) throws {
            guard isSelected(name) else { return }
            rows.append((name, try clientCounts.map { try load.run(clientCount: $0, callsPerClient: calls / $0 * ($0 == 1 ? 1 : 2), body) }))
        }
        try measure("Peer.Ping (the floor)", calls: calls) { connection, _, _ in try connection.ping(KeywellNames.busName) }
        // The caller's identity, known after its first call: what access control adds to each call.
        try measure("WhoAmI (identity cached per connection)", calls: calls) { connection, _, _ in
            _ = try NativeCalls.call(connection, .whoAmI, [])
        }
        // A call the daemon refuses before the engine (wrong signature): the D-Bus layer's worker
        // hop plus the daemon's own handling, without SQLite or crypto.
        try measure("Lock() → Param (daemon, no engine)", calls: calls) { connection, _, _ in
            do { _ = try NativeCalls.call(connection, .lock, []) } catch let error as DBusError where error.name.hasSuffix(".Param") {}
        }
        try measure("CopyMatching by primary key, r_Data", calls: calls) { connection, _, n in
            let index = (n &* 7919) % itemCount
            var query = NativeCalls.primaryKey(NativeCalls.account(index), NativeCalls.service(index))
            query[WireKey.returnData] = true
            _ = try NativeCalls.call(connection, .copyMatching, [.stringVariantDict(query)])
        }
        try measure("CopyMatching all \(itemCount), r_Attributes", calls: max(16, calls / 20)) { connection, _, _ in
            _ = try NativeCalls.call(connection, .copyMatching, [.stringVariantDict([
                WireKey.class: .string(WireKey.classGenericPassword), WireKey.matchLimit: .string(WireKey.matchLimitAll), WireKey.returnAttributes: true,
            ])])
        }
        for (round, clientCount) in clientCounts.enumerated() where isSelected("Add (durable)") || isSelected("Delete by primary key (durable)") {
            let perClient = calls / clientCount * (clientCount == 1 ? 1 : 2)
            let add = try load.run(clientCount: clientCount, callsPerClient: perClient) { connection, client, n in
                let key = NativeCalls.primaryKey("add-\(round)-\(client)-\(n)", "bench")
                _ = try NativeCalls.call(connection, .add, [.stringVariantDict(key.merging([WireKey.valueData: .bytes(Array("secret \(n)".utf8))]) { $1 })])
            }
            let delete = try load.run(clientCount: clientCount, callsPerClient: perClient) { connection, client, n in
                _ = try NativeCalls.call(connection, .delete, [.stringVariantDict(NativeCalls.primaryKey("add-\(round)-\(client)-\(n)", "bench"))])
            }
            appendResult(&rows, "Add (durable)", add, clientCount)
            appendResult(&rows, "Delete by primary key (durable)", delete, clientCount)
        }
        print("")
        printLatencyTable(rows, floor: floor, itemCount: itemCount)
        if rowFilter != nil {
            for (name, results) in rows {
                print("\(name): calls in flight at once, at most " + results.map { "\($0.peakInFlight)" }.joined(separator: " / "))
            }
            return
        }
        try printTargets(clients[0], daemon: pid, itemCount: itemCount, commit: floor)

        // Add stays flat as the keychain grows.
        print("")
        print("Add p50 as the keychain grows (filled in-process with the batch API, 1000 items per transaction):")
        print("items      Add p50 (µs)   CopyMatching by key p50 (µs)   keywelld VmRSS MiB: busy / \(idleWait) s idle (of which anonymous)")
        print("(started)".padding(toLength: 11, withPad: " ", startingAt: 0) + "-".padding(toLength: 15, withPad: " ", startingAt: 0)
              + "-".padding(toLength: 31, withPad: " ", startingAt: 0)
              + String(format: "- / %.1f (%.1f)", Double(startedKiB) / 1024, Double(startedAnonKiB) / 1024))
        for size in sizes {
            try filler.fill(to: size)
            let count = filler.count
            let add = try load.run(clientCount: 1, callsPerClient: 300) { connection, _, n in
                let key = NativeCalls.primaryKey("flat-\(size)-\(n)", "bench")
                _ = try NativeCalls.call(connection, .add, [.stringVariantDict(key.merging([WireKey.valueData: .bytes([1, 2, 3])]) { $1 })])
            }
            let find = try load.run(clientCount: 1, callsPerClient: 300) { connection, _, n in
                let index = (n &* 7919) % count
                var query = NativeCalls.primaryKey(NativeCalls.account(index), NativeCalls.service(index))
                query[WireKey.returnData] = true
                _ = try NativeCalls.call(connection, .copyMatching, [.stringVariantDict(query)])
            }
            let busyKiB = residentKiB(of: pid)
            sleep(UInt32(idleWait))
            let idleKiB = residentKiB(of: pid)
            let idleAnonKiB = residentKiB(of: pid, field: "RssAnon:")
            print("\(size)".padding(toLength: 11, withPad: " ", startingAt: 0)
                  + formatMicroseconds(add.latencies.percentile(0.5)).padding(toLength: 15, withPad: " ", startingAt: 0)
                  + formatMicroseconds(find.latencies.percentile(0.5)).padding(toLength: 31, withPad: " ", startingAt: 0)
                  + String(format: "%.1f / %.1f (%.1f)", Double(busyKiB) / 1024, Double(idleKiB) / 1024, Double(idleAnonKiB) / 1024))
        }
    }

    private func isSelected(_ row: String) -> Bool {
        rowFilter.map { row.contains($0) } ?? true
    }

    private func appendResult(_ rows: inout [(String, [DaemonLoad.Result])], _ name: String, _ result: DaemonLoad.Result, _ clients: Int) {
        if clients == 1 { rows.append((name, [result])) } else if let index = rows.firstIndex(where: { $0.0 == name }) { rows[index].1.append(result) }
    }

    private func printLatencyTable(_ rows: [(String, [DaemonLoad.Result])], floor: LatencySamples, itemCount: Int) {
        print("at \(itemCount) items        1 client: p50 / p99 µs    ops/s  |  8 clients: p50 / p99 µs    total ops/s")
        for (name, results) in rows {
            var line = name.padding(toLength: 40, withPad: " ", startingAt: 0)
            for result in results {
                line += result.latencies.percentilesText.leftPadded(to: 18) + formatRate(result.totalRate).leftPadded(to: 10) + "   "
            }
            print(line)
        }
        print("one durable SQLite commit (WAL, synchronous=FULL): p50 / p99 \(floor.percentilesText) µs")
    }

    /// The issue's two latency targets. They compare against Ping measured in the same breath: one
    /// client alternates Ping with the call, so a noisy neighbour on a shared machine weighs on both alike.
    private func printTargets(_ connection: DBusConnection, daemon: pid_t, itemCount: Int, commit: LatencySamples) throws {
        let find = { @Sendable (connection: DBusConnection, n: Int) throws in
            let index = (n &* 7919) % itemCount
            var query = NativeCalls.primaryKey(NativeCalls.account(index), NativeCalls.service(index))
            query[WireKey.returnData] = true
            _ = try NativeCalls.call(connection, .copyMatching, [.stringVariantDict(query)])
        }
        let pairedFind = try alternating(with: connection, calls: calls, find)
        let pairedAdd = try alternating(with: connection, calls: calls) { connection, n in
            let key = NativeCalls.primaryKey("paired-\(UUID().uuidString)", "bench")
            _ = try NativeCalls.call(connection, .add, [.stringVariantDict(key.merging([WireKey.valueData: .bytes([1, 2, 3])]) { $1 })])
        }
        print("alternated with Ping on one client: CopyMatching by key p50 \(formatMicroseconds(pairedFind.call.percentile(0.5))) µs"
              + " beside Ping \(formatMicroseconds(pairedFind.ping.percentile(0.5))) µs; Add p50 \(formatMicroseconds(pairedAdd.call.percentile(0.5))) µs"
              + " beside Ping \(formatMicroseconds(pairedAdd.ping.percentile(0.5))) µs")
        let findRatio = pairedFind.call.percentile(0.5).seconds / pairedFind.ping.percentile(0.5).seconds
        let addRatio = pairedAdd.call.percentile(0.5).seconds
            / (pairedAdd.ping.percentile(0.5).seconds + commit.percentile(0.5).seconds)
        print(String(format: "targets: CopyMatching by key p50 %.2f × Ping (≤ 2) %@; Add p50 %.2f × (Ping + commit) (≤ 2) %@",
                     findRatio, findRatio <= 2 ? "met" : "NOT met", addRatio, addRatio <= 2 ? "met" : "NOT met"))
        // What each call costs keywelld itself, free of the wake-ups the round trips wait for.
        let pingCPU = try cpuTimePerCall(of: daemon, calls: calls) { _ in try connection.ping(KeywellNames.busName) }
        let findCPU = try cpuTimePerCall(of: daemon, calls: calls) { n in try find(connection, n) }
        if let pingCPU, let findCPU {
            print(String(format: "keywelld CPU per call: Ping %.1f µs, CopyMatching by key %.1f µs",
                         pingCPU.seconds * 1e6, findCPU.seconds * 1e6))
        }
        print("target (access control):\n\(try AccessCheckRow.measure(connection, calls: calls).line)")
    }

    /// `--targets-only N`: a daemon with 1,000 items, then the two targets N times (for repeated checks).
    private func measureTargets(_ world: DaemonBenchmarkWorld, _ daemonPath: String, rounds: Int) throws {
        let pid = try world.startDaemon(daemonPath, log: daemonLog)
        defer { world.stopDaemon(pid) }
        let connection = try world.connect()
        defer { connection.close() }
        try waitForName(connection)
        _ = try NativeCalls.call(connection, .createKeychain, ["bench", .bytes(Array("bench".utf8))])
        _ = try NativeCalls.call(connection, .setDefaultKeychain, ["bench"])
        _ = try NativeCalls.call(connection, .setSearchList, [.stringArray(["bench"])])
        let filler = try Filler(environment: world.environment)
        try filler.fill(to: 1000)
        let commit = LatencySamples(try StorageProbe.durableInsertLatencies(in: URL(fileURLWithPath: world.root), rowBytes: 256, count: 300))
        print("one durable SQLite commit (WAL, synchronous=FULL): p50 / p99 \(commit.percentilesText) µs")
        for _ in 0..<rounds { try printTargets(connection, daemon: pid, itemCount: filler.count, commit: commit) }
    }

    /// `calls` rounds of Ping then `call` on one connection, timed separately.
    private func alternating(with connection: DBusConnection, calls: Int,
                             _ call: (DBusConnection, Int) throws -> Void) throws -> (ping: LatencySamples, call: LatencySamples) {
        for n in 0..<50 { try connection.ping(KeywellNames.busName); try call(connection, calls + n) }
        var pings: [Duration] = [], timed: [Duration] = []
        pings.reserveCapacity(calls)
        timed.reserveCapacity(calls)
        for n in 0..<calls {
            let start = ContinuousClock.now
            try connection.ping(KeywellNames.busName)
            let middle = ContinuousClock.now
            try call(connection, n)
            pings.append(middle - start)
            timed.append(ContinuousClock.now - middle)
        }
        return (LatencySamples(pings), LatencySamples(timed))
    }

    private func waitForName(_ connection: DBusConnection) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while try !connection.nameHasOwner(KeywellNames.busName) {
            guard ContinuousClock.now < deadline else { throw BenchmarkFailure("keywelld never took its name") }
            usleep(1000)
        }
    }

    /// Time from just before posix_spawn to the bus announcing the new owner, `starts` times.
    private func measureStarts(_ world: DaemonBenchmarkWorld, _ daemonPath: String) throws -> LatencySamples {
        let watcher = try world.connect()
        defer { watcher.close() }
        let events = OwnerEvents()
        try watcher.addMatch(.nameOwnerChanged(name: KeywellNames.busName)) { signal in
            events.record(owned: !(signal.arguments.count > 2 && signal.arguments[2].stringValue == ""))
        }
        var samples = LatencySamples()
        for _ in 0..<starts {
            let start = ContinuousClock.now
            let pid = try world.startDaemon(daemonPath)
            guard let owned = events.wait(owned: true) else { throw BenchmarkFailure("keywelld did not take its name") }
            samples.append(owned - start)
            world.stopDaemon(pid)
            _ = events.wait(owned: false)
        }
        return samples
    }
}

/// NameOwnerChanged arrivals, with their time.
// @unchecked: `events` is only touched with `condition` held (a condition wait: no Mutex).
private final class OwnerEvents: @unchecked Sendable {
    private let condition = ConditionLock()
    private var events: [(owned: Bool, at: ContinuousClock.Instant)] = []

    func record(owned: Bool) {
        condition.withLock {
            events.append((owned, ContinuousClock.now))
            condition.broadcast()
        }
    }

    /// The time of the next event of that kind (consumed), or nil after 10 s.
    func wait(owned: Bool) -> ContinuousClock.Instant? {
        let limit = deadline(after: .seconds(10))
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let index = events.firstIndex(where: { $0.owned == owned }) {
                let event = events[index]
                events.removeSubrange(...index)
                return event.at
            }
            guard condition.wait(untilNanoseconds: limit) else { return nil }
        }
    }
}

/// Fills the benchmark keychain in this process, through the engine's batch API, while the daemon runs.
private final class Filler {
    private let store: KeychainStore
    private(set) var count = 0

    init(environment: [String: String]) throws {
        store = try KeychainStore(paths: KeywellPaths.fromEnvironment(environment), kdf: .fastForTests)
        try store.locking.unlock("bench", password: SecretBytes(copying: Array("bench".utf8)))
    }

    func fill(to size: Int) throws {
        while count < size {
            let end = min(size, count + 1000)
            try store.items.addBatch((count..<end).map(NativeCalls.fillerItem))
            count = end
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
