import ArgumentParser
import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSystem
import SecretServiceCrypto

/// `keywell-bench secrets`: the same Secret Service client workload against keywelld and against
/// gnome-keyring-daemon, each on its own private bus in a scratch home, in one run.
///
/// The client speaks D-Bus through KeywellDBus and does what libsecret does: a real
/// `dh-ietf1024-sha256-aes128-cbc-pkcs7` session (its own key pair, the shared key derived), every
/// secret it sends encrypted and every secret it reads decrypted and checked. A row times each
/// call's round trip, from handing the built message to libdbus to holding its reply, as it times
/// the Pings alternated with it: building the call (its arguments, the secret's encryption, the
/// client's key pair for OpenSession) comes before the clock starts, and reading and checking the
/// reply after it stops. The bench prints that client work per round beside the rows.
struct SecretServiceBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secrets",
        abstract: "Secret Service (org.freedesktop.secrets): keywelld against gnome-keyring-daemon, same workload."
    )

    @Option(help: "The keywelld to measure (default: the one next to this program).")
    var keywelld: String?

    @Option(help: "The gnome-keyring-daemon to compare with; \"none\" to skip it.")
    var gnomeKeyring = "/usr/bin/gnome-keyring-daemon"

    @Option(help: "Item counts to measure at, comma-separated.")
    var sizes = "1000,10000"

    @Option(help: "Timed calls per operation (CreateItem and GetSecrets of 1,000 use fewer).")
    var calls = 2000

    @Option(help: "Timed GetSecrets of 1,000 items for keywelld (gnome-keyring makes 3); more to profile that call.")
    var bulkCalls = 10

    @Option(help: "Seconds gnome-keyring may spend filling up before its larger sizes are estimated instead.")
    var gnomeBudget = 120.0

    func run() throws {
        let daemonPath = keywelld ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("keywelld").path
        guard FileManager.default.isExecutableFile(atPath: daemonPath) else {
            throw ValidationError("no keywelld at \(daemonPath); pass --keywelld")
        }
        let sizes = self.sizes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.sorted()
        guard let smallest = sizes.first, smallest >= 1000 else { throw ValidationError("sizes start at 1000 or more") }

        print("Secret Service benchmark: one client, private dbus-daemon per service, same machine")
        print("keywelld: \(daemonPath) (fast KDF; the calls are measured, not Argon2id)")
        var services: [ServiceUnderTest] = [try KeywellService(daemonPath: daemonPath)]
        if gnomeKeyring != "none" {
            if FileManager.default.isExecutableFile(atPath: gnomeKeyring) {
                print("gnome-keyring: \(gnomeKeyring) \(ServiceUnderTest.version(of: gnomeKeyring))")
                services.append(try GnomeKeyringService(path: gnomeKeyring))
            } else {
                print("gnome-keyring: not installed at \(gnomeKeyring); keywelld alone")
            }
        }
        defer { services.forEach { $0.stop() } }

        let commits = try DurableCommitProbe(in: URL(fileURLWithPath: NSTemporaryDirectory()), rowBytes: 256)
        let commit = try LatencySamples((0..<200).map { _ in try commits.commit() }).percentile(0.5)
        print("floor: one durable SQLite commit (WAL, synchronous=FULL) p50 \(formatMicroseconds(commit)) µs at the start; "
              + "writes are held to Peer.Ping + such a commit (measured again just before them), reads to Peer.Ping")
        print("")

        var report = SecretServiceReport(services: services.map(\.name))
        for size in sizes {
            for service in services {
                let fill = try service.fill(to: size, budget: gnomeBudget)
                if case .estimated(let seconds, let perItem) = fill {
                    report.note(service.name, size, String(format: "filling to %d would take about %.0f min (CreateItem %.0f ms at %d items and growing with the count); not measured",
                                                            size, seconds / 60, perItem * 1000, service.count))
                    continue
                }
                report.add(size, service.name, try service.measure(calls: calls, bulkCalls: bulkCalls, commits: commits))
            }
        }
        report.print()
        guard report.printTargets(gnomeSkipped: gnomeKeyring == "none") else { throw ExitCode(1) }
    }
}

// MARK: The services

/// One Secret Service on its own bus: how to start it and the workload against it.
class ServiceUnderTest {
    let name: String
    let world: DaemonBenchmarkWorld
    let client: DBusConnection
    /// Paths of the bench items, in creation order.
    private(set) var items: [String] = []
    private var session = ClientDHSession(path: "", cipher: nil)
    /// CreateItem latencies while filling, for gnome-keyring's estimate.
    private var lastFillCost: Double = 0

    static let service = "org.freedesktop.secrets"
    static let collection = "/org/freedesktop/secrets/aliases/default"

    init(name: String) throws {
        self.name = name
        world = try DaemonBenchmarkWorld()
        client = try world.connect()
    }

    var count: Int { items.count }

    /// The service's process, whose CPU time each row reads (nil: not known).
    var servicePID: pid_t? { nil }

    func stop() { client.close() }

    static func version(of path: String) -> String {
        guard let run = try? ChildSpawner.runToEnd(SpawnRequest(executable: path, arguments: ["--version"],
                                                                environment: ProcessInfo.processInfo.environment)) else { return "" }
        let text = String(decoding: run.output, as: UTF8.self)
        return text.split(separator: "\n").first.map { String($0.split(separator: " ").last ?? "") } ?? ""
    }

    /// Waits until the service owns its name, then opens the sessions the workload uses.
    func ready() throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while try !client.nameHasOwner(Self.service) {
            guard ContinuousClock.now < deadline else { throw BenchmarkFailure("\(name) never owned \(Self.service)") }
            usleep(10_000)
        }
        session = try openSession(try DHKeyExchange())
    }

    enum Fill {
        case done
        /// Too slow to wait for: the estimated seconds and the last per-item cost.
        case estimated(Double, Double)
    }

    /// Adds items until there are `size`; a service whose fill would exceed `budget` seconds stops
    /// and returns an estimate (cost per item grows linearly with the count for gnome-keyring).
    func fill(to size: Int, budget: Double) throws -> Fill {
        let start = ContinuousClock.now
        let budget = isSlow ? budget : .infinity
        while items.count < size {
            let before = ContinuousClock.now
            items.append(try createItem(items.count))
            lastFillCost = (ContinuousClock.now - before).seconds
            let spent = (ContinuousClock.now - start).seconds
            if spent > budget / 4, items.count % 50 == 0 {
                // Cost grows with n: the remaining time is about the area under a line through here.
                let perItemNow = lastFillCost
                let remaining = Double(size - items.count)
                let estimate = remaining * perItemNow * (1 + remaining / Double(2 * items.count))
                if spent + estimate > budget { return .estimated(spent + estimate, perItemNow) }
            }
        }
        return .done
    }

    // MARK: Calls

    /// A DH session from the client's key pair `exchange`, the shared key derived.
    func openSession(_ exchange: DHKeyExchange) throws -> ClientDHSession {
        // libsecret sends its public key without leading zero bytes.
        let publicKey = Array(exchange.publicKey.drop(while: { $0 == 0 }))
        let reply = try client.call(destination: Self.service, path: "/org/freedesktop/secrets",
                                    interface: "org.freedesktop.Secret.Service", member: SecretServiceProtocol.Member.openSession,
                                    arguments: [.string(DHKeyExchange.algorithm), .variant(.bytes(publicKey))])
        guard let serverKey = reply[0].variantValue?.bytesValue, serverKey.count >= 64 else {
            throw BenchmarkFailure("\(name): no DH public key")
        }
        let path = try reply.objectPath(at: 1)
        return ClientDHSession(path: path, cipher: AESCBCCipher(key: try exchange.deriveKey(peerPublicKey: serverKey)))
    }

    static func attributes(_ index: Int) -> [String: String] {
        ["xdg:schema": "org.keywell.Bench", "id": "item-\(index)", "group": "group-\(index % 100)"]
    }

    static func secret(_ index: Int) -> [UInt8] { Array("password-\(index)-0123456789abcdef".utf8) }

    func createItem(_ index: Int) throws -> String {
        try createItem(createArguments(index))
    }

    /// CreateItem's arguments for item `index`, the secret encrypted for the session: the
    /// client's side of the call, made before a timed call so that only the service is timed.
    func createArguments(_ index: Int) throws -> [DBusValue] {
        let properties = DBusValue.stringVariantDict([
            "org.freedesktop.Secret.Item.Label": .string("Bench item \(index)"),
            "org.freedesktop.Secret.Item.Attributes": .stringStringDict(Self.attributes(index)),
        ])
        return [properties, try session.encode(Self.secret(index)), .bool(false)]
    }

    func createItem(_ arguments: [DBusValue]) throws -> String {
        let reply = try client.call(destination: Self.service, path: Self.collection, interface: "org.freedesktop.Secret.Collection",
                                    member: SecretServiceProtocol.Member.createItem, arguments: arguments)
        return try reply.objectPath(at: 0)
    }

    /// A timed row's call: built before the clock starts, its reply read and checked after it
    /// stops, so that the row times the round trip alone, as its Ping does (docs/benchmarks.md,
    /// "What a row times").
    struct TimedCall {
        let call: DBusPreparedCall
        let check: (DBusReceivedReply) throws -> Void

        /// The check of a call whose answer carries nothing to compare: not an error.
        static func answered(_ reply: DBusReceivedReply) throws { _ = try reply.arguments() }
    }

    func prepare(path: String, interface: String, member: String, _ arguments: [DBusValue],
                 check: @escaping (DBusReceivedReply) throws -> Void = TimedCall.answered) throws -> TimedCall {
        TimedCall(call: try client.prepareCall(destination: Self.service, path: path, interface: interface, member: member,
                                               arguments: arguments), check: check)
    }

    func searchItems(_ index: Int) throws -> TimedCall {
        try prepare(path: "/org/freedesktop/secrets", interface: "org.freedesktop.Secret.Service",
                    member: SecretServiceProtocol.Member.searchItems, [.stringStringDict(Self.attributes(index))]) { [self] reply in
            let values = try reply.arguments()
            guard try values.objectPathArray(at: 0) == [items[index]] else { throw BenchmarkFailure("\(name): SearchItems \(index) found \(values)") }
        }
    }

    func getSecret(_ index: Int) throws -> TimedCall {
        try prepare(path: items[index], interface: "org.freedesktop.Secret.Item",
                    member: SecretServiceProtocol.Member.getSecret, [.objectPath(session.path)]) { [self] reply in
            try check(try reply.arguments()[0], index)
        }
    }

    /// Decrypts and checks every secret when `checkAll`, else the first.
    func getSecrets(_ indices: [Int], checkAll: Bool = false) throws -> TimedCall {
        try prepare(path: "/org/freedesktop/secrets", interface: "org.freedesktop.Secret.Service",
                    member: SecretServiceProtocol.Member.getSecrets,
                    [.objectPathArray(indices.map { items[$0] }), .objectPath(session.path)]) { [self] reply in
            let values = try reply.arguments()
            guard let entries = values.first?.dictionaryEntries, entries.count == indices.count else {
                throw BenchmarkFailure("\(name): GetSecrets returned \(values.first?.dictionaryEntries?.count ?? 0) of \(indices.count)")
            }
            for entry in checkAll ? entries[...] : entries.prefix(1) {
                guard let path = entry.key.objectPathValue, let index = indices.first(where: { items[$0] == path }) else {
                    throw BenchmarkFailure("\(name): GetSecrets answered for \(entry.key), not asked for")
                }
                try check(entry.value, index)
            }
        }
    }

    /// OpenSession with a key pair made before the clock starts; the reply must carry the
    /// service's public key and the session's path.
    func openSessionCall(_ exchange: DHKeyExchange) throws -> TimedCall {
        let publicKey = Array(exchange.publicKey.drop(while: { $0 == 0 }))
        return try prepare(path: "/org/freedesktop/secrets", interface: "org.freedesktop.Secret.Service",
                           member: SecretServiceProtocol.Member.openSession,
                           [.string(DHKeyExchange.algorithm), .variant(.bytes(publicKey))]) { [self] reply in
            let values = try reply.arguments()
            guard let serverKey = values.first?.variantValue?.bytesValue, serverKey.count >= 64 else {
                throw BenchmarkFailure("\(name): no DH public key")
            }
            _ = try values.objectPath(at: 1)
        }
    }

    /// CreateItem of item `index`, its secret encrypted for the session; the new path joins `items`.
    func createItemCall(_ index: Int) throws -> TimedCall {
        try prepare(path: Self.collection, interface: "org.freedesktop.Secret.Collection",
                    member: SecretServiceProtocol.Member.createItem, try createArguments(index)) { [self] reply in
            items.append(try reply.arguments().objectPath(at: 0))
        }
    }

    func ping() throws -> TimedCall {
        TimedCall(call: try client.preparePing(Self.service), check: TimedCall.answered)
    }

    func readAlias() throws -> TimedCall {
        try prepare(path: "/org/freedesktop/secrets", interface: "org.freedesktop.Secret.Service",
                    member: SecretServiceProtocol.Member.readAlias, [.string("default")])
    }

    /// Sends a prepared call and checks its reply, untimed (the warm-up, the first full check).
    func run(_ call: TimedCall) throws { try call.check(try client.send(call.call)) }

    /// The secret decrypts to item `index`'s.
    private func check(_ value: DBusValue, _ index: Int) throws {
        guard try session.decode(value) == Self.secret(index) else {
            throw BenchmarkFailure("\(name): the secret of item \(index) does not decrypt to what was stored")
        }
    }

    // MARK: Measuring

    struct Measurement {
        struct Row {
            var operation: String
            var samples: LatencySamples
            var floor: Duration
            /// The client's own work per call, p50, outside the timed span: building the call
            /// and its Ping, reading and checking their replies.
            var clientWork: Duration
        }

        var count: Int
        /// The p50 of all the Pings alternated with the calls.
        var ping: Duration
        /// The p50 of the durable commits measured just before the writes.
        var commit: Duration
        /// Each row's floor is the Ping measured alternately with its own calls, so that a noisy
        /// neighbour on a shared machine weighs on the call and its floor alike; a write's adds
        /// the commits measured right before it (one after another, as the writes run: a commit
        /// alternated with them would also slow the write that follows it).
        var rows: [Row]
        /// The service's own CPU time per Ping, and per call of each row with a Ping's taken off
        /// (the scheduler's run time of all its threads): what the service itself spends, apart
        /// from what the machine adds to a round trip. Empty when it cannot be read.
        var pingCPU: Duration?
        var rowCPU: [Duration?]
    }

    func measure(calls: Int, bulkCalls: Int, commits: DurableCommitProbe) throws -> Measurement {
        let size = items.count
        var allPings = LatencySamples()
        var rowPings = LatencySamples()
        var clientWork = LatencySamples()
        // The service's CPU per Ping, taken off each row's (a row's calls alternate with Pings).
        let pingCPU = try cpuTimePerCall(of: servicePID, calls: calls) { _ in try run(try ping()) }
        var lastCPU: Duration?
        /// `n` rounds of a Ping then `make`'s call, each round trip timed apart; the calls are
        /// built and their replies checked outside the timed spans (that work is `clientWork`).
        func timed(_ n: Int, warmUp: Int = 10, _ make: (Int) throws -> TimedCall) throws -> LatencySamples {
            for i in 0..<warmUp { try run(try ping()); try run(try make(i)) }
            var samples = LatencySamples()
            rowPings = LatencySamples()
            clientWork = LatencySamples()
            let clock = ContinuousClock()
            let cpu = try cpuTimePerCall(of: servicePID, calls: n) { i in
                let built = clock.now
                let pingCall = try ping()
                let call = try make(i)
                var pingReply: DBusReceivedReply?
                var reply: DBusReceivedReply?
                let sent = clock.now
                rowPings.append(try KeywellBenchTiming.measure { pingReply = try client.send(pingCall.call) })
                samples.append(try KeywellBenchTiming.measure { reply = try client.send(call.call) })
                let received = clock.now
                try pingCall.check(pingReply!)
                try call.check(reply!)
                clientWork.append((sent - built) + (clock.now - received))
            }
            lastCPU = pingCPU.flatMap { ping in cpu.map { $0 - ping } }
            for duration in rowPings.durations { allPings.append(duration) }
            return samples
        }
        let randomIndex = { (_: Int) -> Int in Int.random(in: 0..<size) }
        var rows: [Measurement.Row] = []
        var rowCPU: [Duration?] = []
        /// After `timed`: its samples, held to the Pings alternated with them (plus `commit`).
        func row(_ name: String, plus commit: Duration = .zero, _ samples: LatencySamples) {
            rows.append(Measurement.Row(operation: name, samples: samples, floor: rowPings.percentile(0.5) + commit,
                                        clientWork: clientWork.percentile(0.5)))
            rowCPU.append(lastCPU)
        }
        // A method that does no work: what any call costs through the service's D-Bus layer.
        row("ReadAlias (no work: the method-call cost)", try timed(calls) { _ in try readAlias() })
        row("SearchItems (1 match)", try timed(calls) { try searchItems(randomIndex($0)) })
        row("GetSecret (DH)", try timed(calls) { try getSecret(randomIndex($0)) })
        row("GetSecrets, 1 item (DH)", try timed(calls) { try getSecrets([randomIndex($0)]) })
        let clientKeys = try (0..<max(20, calls / 3)).map { _ in try DHKeyExchange() }
        row("OpenSession (DH)", try timed(clientKeys.count) { try openSessionCall(clientKeys[$0]) })
        let batches = isSlow ? 3 : max(1, bulkCalls)
        try run(try getSecrets(Array(0..<min(size, 1000)), checkAll: true))
        row("GetSecrets, 1,000 items in one call (DH)", try timed(batches, warmUp: 1) { batch in
            let start = (batch * 997) % max(1, size - 1000)
            return try getSecrets(Array(start..<min(size, start + 1000)))
        })
        // Last: it grows the collection (by a few items only).
        let creates = isSlow ? 10 : min(calls, 200)
        let commit = try LatencySamples((0..<100).map { _ in try commits.commit() }).percentile(0.5)
        row("CreateItem", plus: commit, try timed(creates, warmUp: 1) { _ in try createItemCall(items.count) })
        return Measurement(count: size, ping: allPings.percentile(0.5), commit: commit, rows: rows, pingCPU: pingCPU, rowCPU: rowCPU)
    }

    /// gnome-keyring: fewer repetitions of the calls that take tens of milliseconds there.
    var isSlow: Bool { false }
}

final class KeywellService: ServiceUnderTest {
    private var pid: pid_t = 0

    init(daemonPath: String) throws {
        try super.init(name: "keywelld")
        pid = try world.startDaemon(daemonPath)
        try ready()
        _ = try NativeCalls.call(client, .createKeychain, [.string("login"), .bytes(Array("bench".utf8))])
    }

    override func ready() throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while try !client.nameHasOwner(KeywellNames.busName) {
            guard ContinuousClock.now < deadline else { throw BenchmarkFailure("keywelld never started") }
            usleep(10_000)
        }
        try super.ready()
    }

    override var servicePID: pid_t? { pid }

    override func stop() {
        super.stop()
        world.stopDaemon(pid)
    }
}

final class GnomeKeyringService: ServiceUnderTest {
    private var pid: pid_t = 0

    init(path: String) throws {
        try super.init(name: "gnome-keyring")
        // --unlock reads the login password on stdin and creates the login keyring, unlocked.
        let child = try ChildSpawner.spawn(SpawnRequest(
            executable: path, arguments: ["--foreground", "--components=secrets", "--unlock"],
            environment: world.environment, standardInput: .pipe))
        pid = child.pid
        let password = Array("bench".utf8)
        _ = password.withUnsafeBytes { try? child.standardInput!.writeAll($0) }
        try? child.standardInput!.close()
        try ready()
    }

    override var isSlow: Bool { true }

    override var servicePID: pid_t? { pid }

    override func stop() {
        super.stop()
        kill(pid, SIGTERM)
        _ = ChildSpawner.waitForExit(pid)
    }
}

/// The client's side of a DH session: the path, and the AES key both sides derived.
struct ClientDHSession {
    let path: String
    let cipher: AESCBCCipher?

    func encode(_ secret: [UInt8]) throws -> DBusValue {
        guard let cipher else { throw BenchmarkFailure("session \(path) has no key") }
        let (iv, ciphertext) = try cipher.seal(secret)
        return .structure([.objectPath(path), .bytes(iv), .bytes(ciphertext), .string("text/plain")])
    }

    func decode(_ value: DBusValue) throws -> [UInt8] {
        guard let cipher else { throw BenchmarkFailure("session \(path) has no key") }
        guard let fields = value.structureFields, fields.count == 4, fields[0].objectPathValue == path,
              let iv = fields[1].bytesValue, let ciphertext = fields[2].bytesValue
        else { throw BenchmarkFailure("not a secret of session \(path): \(value)") }
        return try cipher.open(iv: iv, ciphertext: ciphertext)
    }
}

// MARK: The table

struct SecretServiceReport {
    let services: [String]
    private var results: [Int: [String: ServiceUnderTest.Measurement]] = [:]
    private var notes: [Int: [String: String]] = [:]

    init(services: [String]) {
        self.services = services
    }

    mutating func add(_ size: Int, _ service: String, _ measurement: ServiceUnderTest.Measurement) {
        results[size, default: [:]][service] = measurement
    }

    mutating func note(_ service: String, _ size: Int, _ text: String) {
        notes[size, default: [:]][service] = text
    }

    func print() {
        let sizes = Set(results.keys).union(notes.keys).sorted()
        for size in sizes {
            let measured = results[size] ?? [:]
            Swift.print("— \(size) items —")
            for service in services {
                if let m = measured[service] {
                    Swift.print("  \(service): Peer.Ping p50 \(formatMicroseconds(m.ping)) µs (read floor; each row uses the Pings "
                                + "alternated with its own calls; every row times send to reply, its Pings too); + commit = "
                                + "\(formatMicroseconds(m.ping + m.commit)) µs (write floor)")
                } else if let note = notes[size]?[service] {
                    Swift.print("  \(service): \(note)")
                }
            }
            var header = "  " + "operation".padding(toLength: 42, withPad: " ", startingAt: 0)
            for service in services where measured[service] != nil {
                header += service.padding(toLength: 14, withPad: " ", startingAt: 0) + "p99".padding(toLength: 10, withPad: " ", startingAt: 0)
                    + "×floor".padding(toLength: 9, withPad: " ", startingAt: 0)
            }
            if measured.count > 1 { header += "ratio" }
            Swift.print(header)
            guard let first = measured[services[0]] ?? measured.values.first else { continue }
            for (row, entry) in first.rows.enumerated() {
                var line = "  " + entry.operation.padding(toLength: 42, withPad: " ", startingAt: 0)
                var p50s: [Double] = []
                for service in services {
                    guard let m = measured[service], row < m.rows.count else { continue }
                    let samples = m.rows[row].samples
                    let p50 = samples.percentile(0.5)
                    let floor = m.rows[row].floor
                    p50s.append(p50.seconds)
                    line += (Self.latency(p50)).padding(toLength: 14, withPad: " ", startingAt: 0)
                        + Self.latency(samples.percentile(0.99)).padding(toLength: 10, withPad: " ", startingAt: 0)
                        + String(format: "%.1f", p50.seconds / floor.seconds).padding(toLength: 9, withPad: " ", startingAt: 0)
                }
                if p50s.count > 1, p50s[0] > 0 {
                    line += String(format: "%.1f× faster", p50s[1] / p50s[0])
                }
                Swift.print(line)
            }
            for service in services {
                guard let m = measured[service], let pingCPU = m.pingCPU else { continue }
                let parts = zip(m.rows, m.rowCPU).compactMap { row, cpu in
                    cpu.map { "\(Self.shortName(row.operation)) \(Self.latency(max($0, .zero)))" }
                }
                Swift.print("  \(service) CPU per call (all its threads, user and kernel; the call's own: each round's Ping, "
                            + "\(formatMicroseconds(pingCPU)) µs, taken off): "
                            + parts.joined(separator: ", "))
            }
            if let first = measured[services[0]] {
                let parts = first.rows.map { "\(Self.shortName($0.operation)) \(Self.latency($0.clientWork))" }
                Swift.print("  the client's own work per round, p50, outside the timed spans (building the call and its Ping, "
                            + "reading and checking both replies; \(services[0])'s rows): " + parts.joined(separator: ", "))
            }
            Swift.print("")
        }
    }

    /// The targets, for the smallest size keywelld was measured at; whether all were met.
    func printTargets(gnomeSkipped: Bool) -> Bool {
        guard let size = results.keys.sorted().first(where: { results[$0]?[services[0]] != nil }),
              let keywelld = results[size]?[services[0]] else {
            Swift.print("targets: keywelld was not measured")
            return false
        }
        let gnome = services.count > 1 ? results[size]?[services[1]] : nil
        Swift.print("targets (\(size) items; access lists judged on every read):")
        let lines = SecretServiceTargets.lines(keywelld: keywelld, gnome: gnome, gnomeSkipped: gnomeSkipped)
        for line in lines { Swift.print("  \(line.met ? "met   " : "MISSED") \(line.text)") }
        return lines.allSatisfy(\.met)
    }

    /// A row's name without its parenthesis ("GetSecret (DH)" → "GetSecret").
    static func shortName(_ operation: String) -> String {
        operation.split(separator: " (").first.map(String.init) ?? operation
    }

    /// µs below 10 ms, ms above.
    static func latency(_ duration: Duration) -> String {
        duration.seconds < 0.01 ? "\(formatMicroseconds(duration)) µs" : String(format: "%.1f ms", duration.seconds * 1000)
    }
}
