import ArgumentParser
import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSync
import Logging

/// `keywell-bench sync` (docs/sync.md): the time from a local add until its record is in the
/// folder (the real keywelld), the cost of merging 10,000 arriving records (one transaction),
/// and how big a folder gets after 100,000 changes to 1,000 items (compaction bounds it).
/// Exits non-zero when a target is missed.
struct SyncBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Sync between machines: add-to-folder latency, merge cost, folder size under compaction."
    )

    @Option(help: "The keywelld to drive (default: the one next to this program).")
    var keywelld: String?

    @Option(help: "Local adds timed until their record is in the folder.")
    var adds = 20

    @Option(help: "Records arriving at once for the merge.")
    var arriving = 10_000

    @Option(help: "Changes made to the items for the folder-size run.")
    var changes = 100_000

    @Option(help: "Items those changes go to.")
    var items = 1_000

    static let latencyTarget: Duration = .seconds(1)
    static let mergeTarget: Duration = .seconds(2)

    func run() throws {
        let latency = try SyncRuns.addLatency(daemonPath: try locateKeywelld(keywelld), adds: adds)
        print(String(format: "sync, local add until its record is in the folder (keywelld): median %.0f ms, max %.0f ms over %d adds (target <= %.0f ms)",
                     latency.median.milliseconds, latency.max.milliseconds, adds, Self.latencyTarget.milliseconds))
        let merge = try SyncRuns.mergeCost(records: arriving)
        print(String(format: "sync, merging %d arriving records: %.2f s (read, open and apply in one transaction; target <= %.1f s), %.0f records/s",
                     arriving, merge.seconds, Self.mergeTarget.seconds, Double(arriving) / merge.seconds))
        let size = try SyncRuns.folderSize(changes: changes, items: items)
        print(String(format: "sync, folder after %d changes to %d items: %d files, %.1f KiB (largest seen %.1f KiB); "
                         + "one snapshot of the items is %.1f KiB; without compaction ~%.1f MiB (%.1f%% of it)",
                     changes, items, size.files, Double(size.bytes) / 1024, Double(size.largest) / 1024, Double(size.snapshot) / 1024,
                     Double(size.uncompacted) / 1_048_576, 100 * Double(size.bytes) / Double(max(1, size.uncompacted))))
        var missed: [String] = []
        if latency.max > Self.latencyTarget { missed.append("add latency") }
        if merge > Self.mergeTarget { missed.append("merge cost") }
        // Bounded: the folder never outgrows a few snapshots of the live items plus one batch of records.
        if size.largest > 3 * size.snapshot + SyncLimits.recordsBeforeSnapshot * size.recordBytes * 2 { missed.append("folder size") }
        if !missed.isEmpty {
            print("sync: target missed: \(missed.joined(separator: ", "))")
            throw ExitCode(1)
        }
    }
}

enum SyncRuns {
    /// A scratch folder on tmpfs when there is one: the folder-size run makes 100,000 writes,
    /// each fsynced, and measures sizes, not the disk.
    static func scratch(_ prefix: String) throws -> String {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ValidationError("mkdtemp failed") }
        return String(cString: made)
    }

    static func store(at root: String) throws -> KeychainStore {
        let base = URL(fileURLWithPath: root)
        let store = try KeychainStore(paths: KeywellPaths(
            keychainsDirectory: base.appendingPathComponent("data"), configDirectory: base.appendingPathComponent("config"),
            runtimeDirectory: base.appendingPathComponent("run")), kdf: .fastForTests)
        _ = try store.registry.createKeychain("login", password: SecretBytes(copying: Array("pw".utf8)))
        return store
    }

    static let password = SecretBytes(copying: Array("bench sync password".utf8))

    static func item(_ index: Int, secret: String) -> WireDictionary {
        [WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: .string("user\(index)@example.com"),
         AttributeKey.service: .string("service-\(index % 50)"), AttributeKey.label: .string("Label \(index)"),
         WireKey.valueData: .data(Data(secret.utf8))]
    }

    /// Adds through the real keywelld, each timed until a new record file is in the folder.
    static func addLatency(daemonPath: String, adds: Int) throws -> (median: Duration, max: Duration) {
        let world = try ActivatedDaemonWorld(daemonPath: daemonPath, extraEnvironment: ["KEYWELL_TEST_FAST_KDF": "1"])
        let connection = try world.connect()
        defer { connection.close() }
        let folder = world.root + "/sync"
        guard mkdir(folder, 0o700) == 0 else { throw ValidationError("cannot make \(folder)") }
        _ = try NativeCalls.call(connection, .createKeychain, [.string("login"), .bytes(Array("pw".utf8))])
        _ = try NativeCalls.call(connection, .syncEnable, [.string("login"), .string(folder), .bytes(Array("sync pw".utf8)), .bool(false)])
        var samples: [Duration] = []
        for index in 0..<adds {
            let before = records(in: folder)
            let start = ContinuousClock.now
            _ = try NativeCalls.call(connection, .add, [.stringVariantDict([
                WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: .string("latency\(index)"),
                AttributeKey.service: .string("bench"), WireKey.valueData: .bytes(Array("secret \(index)".utf8)),
            ])])
            while records(in: folder) <= before {
                guard ContinuousClock.now - start < .seconds(10) else { throw ValidationError("no record within 10 s of add \(index)") }
                usleep(500)
            }
            samples.append(ContinuousClock.now - start)
        }
        samples.sort()
        return (samples[samples.count / 2], samples.last ?? .zero)
    }

    private static func records(in folder: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".rec") || $0.hasSuffix(".snap") }.count
    }

    /// `records` files from another machine, merged by a joined keychain in one call.
    static func mergeCost(records count: Int) throws -> Duration {
        let root = try scratch("kwsync-merge")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let folder = root + "/folder"
        guard mkdir(folder, 0o700) == 0 else { throw ValidationError("cannot make \(folder)") }
        let writerStore = try store(at: root + "/a"), readerStore = try store(at: root + "/b")
        let writer = SyncEngine(store: writerStore, logger: Logger(label: "bench-a")), reader = SyncEngine(store: readerStore, logger: Logger(label: "bench-b"))
        try writer.enable("login", folder: folder, password: password, kdf: .fastForTests)
        try reader.join("login", folder: folder, password: password)
        // The writer's records, made the way keywelld makes them: one push per 1,000 adds.
        for start in stride(from: 0, to: count, by: 1_000) {
            for index in start..<min(count, start + 1_000) { _ = try writerStore.items.add(item(index, secret: "secret-\(index)-0123456789")) }
            _ = try writer.push("login")
        }
        let clock = ContinuousClock()
        var summary = SyncEngine.MergeSummary()
        let elapsed = try clock.measure { summary = try reader.merge("login") }
        guard summary.applied == count, summary.refused.isEmpty else {
            throw ValidationError("the merge applied \(summary.applied) of \(count) records, refused \(summary.refused.count)")
        }
        return elapsed
    }

    struct FolderSize {
        var files: Int
        var bytes: Int
        var largest: Int
        var snapshot: Int
        var recordBytes: Int
        var uncompacted: Int
    }

    /// `changes` updates spread over `items` items, pushed 100 at a time as keywelld would after
    /// a burst; the folder's size is taken after every push.
    static func folderSize(changes: Int, items: Int) throws -> FolderSize {
        let root = try scratch("kwsync-size")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let folder = root + "/folder"
        guard mkdir(folder, 0o700) == 0 else { throw ValidationError("cannot make \(folder)") }
        let store = try store(at: root + "/a")
        let engine = SyncEngine(store: store, logger: Logger(label: "bench-size"))
        for index in 0..<items { _ = try store.items.add(item(index, secret: "secret-\(index)-v0-0123456789")) }
        try engine.enable("login", folder: folder, password: password, kdf: .fastForTests)
        var largest = 0, written = 0, recordBytes = 0
        var made = 0
        let batch = min(100, items)
        while made < changes {
            for offset in 0..<min(batch, changes - made) {
                let index = (made + offset) % items
                try store.items.update(item(index, secret: "").filter { $0.key != WireKey.valueData && $0.key != AttributeKey.label },
                                 [WireKey.valueData: .data(Data("secret-\(index)-v\(made)-0123456789".utf8))])
            }
            let pushed = try engine.push("login")
            made += batch
            written += pushed
            let (_, bytes, record) = usage(folder)
            if record > 0 { recordBytes = max(recordBytes, record) }
            largest = max(largest, bytes)
        }
        let (files, bytes, _) = usage(folder)
        // A snapshot of the live items, for scale: what compaction aims at.
        let snapshots = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".snap") }
        let snapshot = snapshots.map { fileSize(folder + "/" + $0) }.max() ?? bytes
        // Every record ever written, at a record's size (a snapshot's share per item when none is left).
        let perRecord = recordBytes > 0 ? recordBytes : snapshot / max(1, items)
        return FolderSize(files: files, bytes: bytes, largest: largest, snapshot: snapshot, recordBytes: perRecord,
                          uncompacted: written * perRecord)
    }

    /// Files, bytes, and the largest record file (snapshots and the header left out).
    private static func usage(_ folder: String) -> (files: Int, bytes: Int, largestRecord: Int) {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { !$0.hasPrefix(".") }
        let sizes = names.map { ($0, fileSize(folder + "/" + $0)) }
        return (names.count, sizes.reduce(0) { $0 + $1.1 }, sizes.filter { $0.0.hasSuffix(".rec") }.map(\.1).max() ?? 0)
    }

    private static func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }
}

extension Duration {
    fileprivate var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
}
