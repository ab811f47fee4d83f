import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol

/// Part two of `keywell-bench startup`: keywelld's (and a baseline keywelld's) and
/// gnome-keyring-daemon's resident memory at the same steps, each daemon on its own private bus
/// with the real Argon2id cost, the steps taken on all of them before each shared wait.
struct DaemonMemorySteps {
    let keywelld: String
    let baselineKeywelld: String?
    let idleWait: Int
    let bigItems: Int
    let gnomeItems: Int

    func run() throws -> [TargetVerdict] {
        var daemons: [any MemorySubject] = [try KeywelldSubject(name: "keywelld", program: keywelld)]
        if let baselineKeywelld { daemons.append(try KeywelldSubject(name: "baseline keywelld", program: baselineKeywelld)) }
        daemons.append(try GnomeKeyringSubject())
        defer { daemons.forEach { $0.stop() } }
        var table = MemoryTable(daemons: daemons.map(\.name))

        var inUseMappings: [(String, Int)] = []
        var idleMappings: [(String, Int)] = [], lockedMappings: [(String, Int)] = []
        func readings(_ step: String, idle: Bool) {
            sleep(idle ? UInt32(idleWait) : 1)
            table.add(idle ? "\(step), idle (\(idleWait) s)" : "\(step) (1 s after)", daemons.map { $0.memory() })
            if step.hasPrefix("1,000"), idle { idleMappings = residentByMapping(daemons[0].pid) }
            if step.hasPrefix("1,000"), !idle { inUseMappings = residentByMapping(daemons[0].pid) }
            if step == "after lock", idle { lockedMappings = residentByMapping(daemons[0].pid) }
        }
        func step(_ name: String, lookup: Bool = false, _ action: (any MemorySubject) throws -> Void) throws {
            for daemon in daemons { try action(daemon) }
            // "In use" is 1 s after a call to that daemon: the actions on the others (gnome-keyring
            // takes a minute for 1,000 items) must not let the first one reach its idle trim.
            for daemon in daemons { try daemon.touch(lookup: lookup) }
            readings(name, idle: false)
            readings(name, idle: true)
        }
        try step("start") { _ in }
        try step("after login unlock") { try $0.unlockLogin() }
        try step("1,000 items, a lookup", lookup: true) { try $0.fill(to: min(1000, $0.itemCap(gnome: gnomeItems))) }
        try step("\(bigItems) items, a lookup", lookup: true) { daemon in
            if daemon.itemCap(gnome: gnomeItems) >= bigItems { try daemon.fill(to: bigItems) }
        }
        try step("after lock") { try $0.lock() }
        print("\nresident memory, MiB (RSS / PSS from /proc/PID/smaps_rollup; peak = VmHWM so far)")
        table.print()
        print("\(daemons[0].name) in use with 1,000 items, resident KiB by mapping (largest first):")
        for (mapping, kib) in inUseMappings.prefix(12) { print(String(format: "  %7d  %@", kib, mapping)) }
        // What the idle figure after lock holds beyond the idle figure with 1,000 items (the target).
        let grown = residentGrowth(from: idleMappings, to: lockedMappings)
        print("\(daemons[0].name) idle after lock − idle with 1,000 items, KiB by mapping (largest first):")
        for (mapping, kib) in grown.prefix(6) { print(String(format: "  %+7d  %@", kib, mapping)) }
        // ICU's data is 30 MiB of the mapping; what of it is resident says whether anything touched it.
        let icu = inUseMappings.filter { $0.0.contains("ICU") }.map(\.1).reduce(0, +)
        print("  (ICU, lib_FoundationICU.so: \(icu) KiB resident)")
        if gnomeItems < bigItems {
            print("gnome-keyring holds \(gnomeItems) items at the \(bigItems)-item step: it rewrites its whole keyring file on every create")
        }

        let keywell = table.column(0)
        func mib(_ step: String) -> Double { Double(keywell[step]?.rss ?? 0) / 1024 }
        let inUseSmall = mib("1,000 items, a lookup (1 s after)"), inUseBig = mib("\(bigItems) items, a lookup (1 s after)")
        let idleSmall = mib("1,000 items, a lookup, idle (\(idleWait) s)"), afterLock = mib("after lock, idle (\(idleWait) s)")
        return [
            .mebibytes("keywelld RSS in use, 1,000 items", inUseSmall, atMost: 15),
            .mebibytes("keywelld RSS in use, \(bigItems) items", inUseBig, atMost: 25),
            .mebibytes("keywelld RSS idle, 1,000 items", idleSmall, atMost: 10),
            .mebibytes("keywelld RSS idle after lock − idle with 1,000 items", afterLock - idleSmall, atMost: 1, signed: true),
        ]
    }
}

/// A daemon whose memory the steps read.
protocol MemorySubject: AnyObject {
    var name: String { get }
    var pid: pid_t { get }
    func unlockLogin() throws
    func fill(to count: Int) throws
    func lookup() throws
    func lock() throws
    /// One call, so that the next reading is "in use": a lookup, or a call valid in every state.
    func touch(lookup: Bool) throws
    func stop()
    /// How many items this subject is filled to at most.
    func itemCap(gnome: Int) -> Int
}

extension MemorySubject {
    func memory() -> ProcessMemory { ProcessMemory(pid: pid) }
}

extension KeywelldSubject {
    func touch(lookup: Bool) throws {
        if lookup { try self.lookup() } else { try call(.listKeychains, []) }
    }
}

extension GnomeKeyringSubject {
    func touch(lookup: Bool) throws {
        if lookup { try self.lookup() } else { _ = try client.search(["service": "none"]) }
    }
}

/// RSS and PSS (smaps_rollup) and the peak RSS so far (VmHWM), in KiB.
struct ProcessMemory {
    var rss = 0, pss = 0, peak = 0

    init(pid: pid_t) {
        if let rollup = try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8) {
            for line in rollup.split(separator: "\n") {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count >= 2, let value = Int(fields[1]) else { continue }
                if fields[0] == "Rss:" { rss = value } else if fields[0] == "Pss:" { pss = value }
            }
        }
        peak = residentKiB(of: pid, field: "VmHWM:")
    }
}

/// Rows of readings, one column per daemon.
struct MemoryTable {
    let daemons: [String]
    private var rows: [(step: String, readings: [ProcessMemory])] = []

    init(daemons: [String]) { self.daemons = daemons }

    mutating func add(_ step: String, _ readings: [ProcessMemory]) { rows.append((step, readings)) }

    func column(_ index: Int) -> [String: ProcessMemory] {
        Dictionary(rows.map { ($0.step, $0.readings[index]) }, uniquingKeysWith: { $1 })
    }

    func print() {
        var header = "step".padding(toLength: 40, withPad: " ", startingAt: 0)
        for daemon in daemons { header += daemon.padding(toLength: 28, withPad: " ", startingAt: 0) }
        Swift.print(header)
        Swift.print("".padding(toLength: 40, withPad: " ", startingAt: 0)
                    + String(repeating: "RSS    PSS    peak         ", count: daemons.count))
        for row in rows {
            var line = row.step.padding(toLength: 40, withPad: " ", startingAt: 0)
            for reading in row.readings {
                line += String(format: "%-6.1f %-6.1f %-6.1f       ", Double(reading.rss) / 1024, Double(reading.pss) / 1024,
                               Double(reading.peak) / 1024)
            }
            Swift.print(line)
        }
    }
}

/// keywelld on its own private bus, real Argon2id; items through the native API, the big step
/// through the engine's batch API in this process (the native API has no batch add).
final class KeywelldSubject: MemorySubject {
    let name: String
    let pid: pid_t
    private let world: CLIBenchWorld
    private let connection: DBusConnection
    private var count = 0
    private var filler: KeychainStore?
    private static let password = Array("login-password".utf8)

    init(name: String, program: String) throws {
        self.name = name
        world = try CLIBenchWorld(name: "memory", activating: [:])
        pid = try world.startBackground(program, [], input: nil)
        try world.waitForName(KeywellNames.busName)
        connection = try DBusConnection(address: world.environment["DBUS_SESSION_BUS_ADDRESS"]!)
    }

    func itemCap(gnome: Int) -> Int { .max }

    fileprivate func call(_ method: NativeMethod, _ arguments: [DBusValue]) throws {
        _ = try connection.call(destination: KeywellNames.busName, path: KeywellNames.objectPath,
                                interface: KeywellNames.interface, member: method.rawValue, arguments: arguments)
    }

    /// Creates the login keychain, locks it, then unlocks it as the PAM hand-off would: the
    /// reading afterwards shows whether Argon2id's working memory stayed resident.
    func unlockLogin() throws {
        try call(.createKeychain, [.string(KeywellNames.loginKeychain), .bytes(Self.password)])
        try call(.lock, [.string(KeywellNames.loginKeychain)])
        try call(.unlock, [.string(KeywellNames.loginKeychain), .bytes(Self.password)])
    }

    func fill(to target: Int) throws {
        // Up to 1,000 through the daemon, one Add each; beyond, in batches of 1,000 in this process.
        while count < min(target, 1000) {
            try call(.add, [.stringVariantDict([
                WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: .string(NativeCalls.account(count)),
                AttributeKey.service: .string(NativeCalls.service(count)), WireKey.valueData: .bytes(Array("password-\(count)".utf8)),
            ])])
            count += 1
        }
        guard count < target else { return }
        let store: KeychainStore
        if let filler { store = filler } else {
            store = try KeychainStore(paths: KeywellPaths.fromEnvironment(world.environment), kdf: .default)
            try store.locking.unlock(KeywellNames.loginKeychain, password: SecretBytes(copying: Self.password))
            filler = store
        }
        while count < target {
            let end = min(target, count + 1000)
            try store.items.addBatch((count..<end).map { index in
                var item = NativeCalls.fillerItem(index)
                item[WireKey.useKeychain] = .string(KeywellNames.loginKeychain)
                return item
            })
            count = end
        }
    }

    func lookup() throws {
        let index = count / 2
        try call(.copyMatching, [.stringVariantDict([
            WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: .string(NativeCalls.account(index)),
            AttributeKey.service: .string(NativeCalls.service(index)), WireKey.returnData: .bool(true),
        ])])
    }

    func lock() throws { try call(.lockAll, []) }

    func stop() {
        connection.close()
        world.stop()
    }
}

/// gnome-keyring-daemon (secrets component) on its own private bus, its login keyring created
/// and unlocked at start (`--unlock`); items through its Secret Service.
final class GnomeKeyringSubject: MemorySubject {
    let name = "gnome-keyring-daemon"
    let pid: pid_t
    private let world: CLIBenchWorld
    private let connection: DBusConnection
    fileprivate let client: SecretServiceClient
    private var count = 0

    init() throws {
        world = try CLIBenchWorld(name: "memory-gnome", activating: [:])
        pid = try world.startBackground("/usr/bin/gnome-keyring-daemon", ["--unlock", "--foreground", "--components=secrets"],
                                        input: "login-password")
        try world.waitForName(KeywellNames.secretsBusName)
        connection = try DBusConnection(address: world.environment["DBUS_SESSION_BUS_ADDRESS"]!)
        client = try SecretServiceClient(connection)
    }

    func itemCap(gnome: Int) -> Int { gnome }

    /// Already unlocked at start: --unlock is how a login hands gnome-keyring its password.
    func unlockLogin() throws {}

    func fill(to target: Int) throws {
        while count < target {
            try client.createItem(in: KeywellNames.loginKeychain, label: "Label \(count % 50)",
                                  attributes: ["account": NativeCalls.account(count), "service": NativeCalls.service(count)],
                                  secret: Array("password-\(count)".utf8), replace: false)
            count += 1
        }
    }

    func lookup() throws {
        let index = count / 2
        let found = try client.search(["account": NativeCalls.account(index), "service": NativeCalls.service(index)])
        if let item = found.first { _ = try client.secret(of: item) }
    }

    func lock() throws {
        _ = try connection.call(destination: KeywellNames.secretsBusName, path: KeywellNames.secretsObjectPath,
                                interface: SecretServiceClient.service, member: SecretServiceProtocol.Member.lock,
                                arguments: [.objectPathArray([SecretServiceClient.collectionPath(KeywellNames.loginKeychain)])])
    }

    func stop() {
        connection.close()
        world.stop()
    }
}

/// Resident KiB per mapped file (anonymous memory as "[anonymous]"), from /proc/PID/smaps,
/// largest first: which libraries the resident pages belong to. `byPermissions`: a file's
/// mappings apart by their permissions (its text, its relocated data, its writable data).
func residentByMapping(_ pid: pid_t, byPermissions: Bool = false) -> [(String, Int)] {
    // /proc files report size 0: read to the end.
    guard let smaps = try? ProcessMemoryScan.readWhole("/proc/\(pid)/smaps") else { return [] }
    var totals: [String: Int] = [:]
    var current = "[anonymous]"
    for line in smaps.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard let first = fields.first else { continue }
        if first.contains("-"), first.first?.isHexDigit == true {
            current = fields.count > 5 ? String(fields[5]) : "[anonymous]"
            if byPermissions, fields.count > 1 { current += " (\(fields[1]))" }
        } else if first == "Rss:", fields.count > 1, let kib = Int(fields[1]) {
            totals[current, default: 0] += kib
        }
    }
    return totals.sorted { $0.value > $1.value }
}

/// What `after` holds beyond `before`, KiB per mapping (both from `residentByMapping`), the
/// changed ones only, largest growth first: what a step left resident.
func residentGrowth(from before: [(String, Int)], to after: [(String, Int)]) -> [(String, Int)] {
    let earlier = Dictionary(before, uniquingKeysWith: +)
    return after.map { ($0.0, $0.1 - (earlier[$0.0] ?? 0)) }.filter { $0.1 != 0 }.sorted { $0.1 > $1.1 }
}
