import ArgumentParser
import Foundation
import KeywellCore
import KeywellProtocol

/// `keywell-bench core`: the engine in-process, at several keychain sizes.
struct CoreBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "core",
        abstract: "KeywellCore in-process: adds, finds, deletes, unlock time and file size."
    )

    @Option(help: "Item counts to measure at, comma-separated.")
    var sizes = "1000,10000,100000"

    @Option(help: "Durable adds, floor commits and deletes timed at each size.")
    var durableSamples = 200

    @Option(help: "Finds timed at each size.")
    var findSamples = 2000

    func run() throws {
        let sizes = self.sizes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !sizes.isEmpty, sizes.allSatisfy({ $0 > 0 }) else {
            throw ValidationError("--sizes needs positive counts, like 1000,10000")
        }
        print("KeywellCore benchmark: in-process, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        let unlock = try measureUnlock(kdf: .default)
        print("Argon2id opsLimit \(KDFParameters.default.opsLimit), memLimit \(KDFParameters.default.memLimit >> 20) MiB:"
              + " unlock p50 \(String(format: "%.3f", unlock.percentile(0.5).seconds)) s,"
              + " max \(String(format: "%.3f", unlock.percentile(1).seconds)) s (\(unlock.durations.count) runs)")
        var results: [SizeResult] = []
        for size in sizes {
            results.append(try measure(size: size))
        }
        printTable(results)
    }

    private struct SizeResult {
        var size: Int
        var batchedRate: Double
        var durableAdd: LatencySamples
        var commitFloor: LatencySamples
        var findByKey: LatencySamples
        var findByLabel: LatencySamples
        var findCaseInsensitive: LatencySamples
        var delete: LatencySamples
        var bytesPerThousand: Double
    }

    private func measure(size: Int) throws -> SizeResult {
        let scratch = try ScratchFolder()
        var store: KeychainStore? = try KeychainStore(paths: scratch.paths, kdf: .fastForTests)
        let password = SecretBytes(copying: Array("benchmark".utf8))
        let keychainPath = try store!.registry.createKeychain("bench", password: password)
        try store!.registry.setSearchList(["bench"])

        var batchedTime = Duration.zero
        for start in stride(from: 0, to: size, by: 1000) {
            let batch = (start..<min(size, start + 1000)).map(Self.item)
            batchedTime += try KeywellBenchTiming.measure { try store!.items.addBatch(batch) }
        }

        var durableAdd = LatencySamples()
        for index in size..<size + durableSamples {
            let item = Self.item(index)
            durableAdd.append(try KeywellBenchTiming.measure { _ = try store!.items.add(item) })
        }
        let commitFloor = LatencySamples(
            try StorageProbe.durableInsertLatencies(in: scratch.root, rowBytes: 256, count: durableSamples))

        var generator = SystemRandomNumberGenerator()
        let findByKey = try timeQueries(store!, count: findSamples) {
            let index = Int.random(in: 0..<size, using: &generator)
            return [
                WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: .string(Self.account(index)),
                AttributeKey.service: .string(Self.service(index)), WireKey.returnData: .bool(true),
            ]
        }
        let findByLabel = try timeQueries(store!, count: findSamples) {
            [
                WireKey.class: .string(WireKey.classGenericPassword),
                AttributeKey.label: .string(Self.label(Int.random(in: 0..<size, using: &generator))),
                WireKey.returnAttributes: .bool(true),
            ]
        }
        let findCaseInsensitive = try timeQueries(store!, count: findSamples) {
            let index = Int.random(in: 0..<size, using: &generator)
            return [
                WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: .string(Self.account(index).uppercased()),
                AttributeKey.service: .string(Self.service(index).uppercased()), WireKey.matchCaseInsensitive: .bool(true),
                WireKey.returnAttributes: .bool(true),
            ]
        }

        var delete = LatencySamples()
        for index in (0..<size).shuffled().prefix(min(durableSamples, size)) {
            let query: WireDictionary = [
                WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: .string(Self.account(index)),
                AttributeKey.service: .string(Self.service(index)),
            ]
            delete.append(try KeywellBenchTiming.measure { try store!.items.delete(query) })
        }
        let remaining = size + durableSamples - delete.durations.count
        store = nil  // closing the last connection checkpoints the WAL into the file
        let bytes = (try FileManager.default.attributesOfItem(atPath: keychainPath)[.size] as? NSNumber)?.doubleValue ?? 0
        return SizeResult(
            size: size, batchedRate: Double(size) / batchedTime.seconds, durableAdd: durableAdd,
            commitFloor: commitFloor, findByKey: findByKey, findByLabel: findByLabel,
            findCaseInsensitive: findCaseInsensitive, delete: delete,
            bytesPerThousand: bytes / Double(remaining) * 1000)
    }

    private func timeQueries(
        _ store: KeychainStore, count: Int, _ makeQuery: () -> WireDictionary
    ) throws -> LatencySamples {
        for _ in 0..<min(100, count) { _ = try store.items.copyMatching(makeQuery()) }  // warm caches
        var samples = LatencySamples()
        for _ in 0..<count {
            let query = makeQuery()
            samples.append(try KeywellBenchTiming.measure { _ = try store.items.copyMatching(query) })
        }
        return samples
    }

    private func measureUnlock(kdf: KDFParameters) throws -> LatencySamples {
        let scratch = try ScratchFolder()
        let store = try KeychainStore(paths: scratch.paths, kdf: kdf)
        let password = SecretBytes(copying: Array("benchmark password".utf8))
        _ = try store.registry.createKeychain("unlock", password: password)
        var samples = LatencySamples()
        for _ in 0..<5 {
            try store.locking.lock("unlock")
            samples.append(try KeywellBenchTiming.measure { try store.locking.unlock("unlock", password: password) })
        }
        return samples
    }

    private func printTable(_ results: [SizeResult]) {
        let rows: [(String, (SizeResult) -> String)] = [
            ("items", { "\($0.size)" }),
            ("add, batched 1000 per call (ops/s)", { formatRate($0.batchedRate) }),
            ("add, one durable add at a time (ops/s)", { formatRate($0.durableAdd.operationsPerSecond) }),
            ("  p50 / p99 (µs)", { $0.durableAdd.percentilesText }),
            ("  floor: one durable SQLite commit (ops/s)", { formatRate($0.commitFloor.operationsPerSecond) }),
            ("  floor p50 / p99 (µs)", { $0.commitFloor.percentilesText }),
            ("find by primary key, r_Data (ops/s)", { formatRate($0.findByKey.operationsPerSecond) }),
            ("  p50 / p99 (µs)", { $0.findByKey.percentilesText }),
            ("find by label, indexed, non-unique (ops/s)", { formatRate($0.findByLabel.operationsPerSecond) }),
            ("  p50 / p99 (µs)", { $0.findByLabel.percentilesText }),
            ("find by account+service, case-insensitive (ops/s)", { formatRate($0.findCaseInsensitive.operationsPerSecond) }),
            ("  p50 / p99 (µs)", { $0.findCaseInsensitive.percentilesText }),
            ("delete one, durable (ops/s)", { formatRate($0.delete.operationsPerSecond) }),
            ("  p50 / p99 (µs)", { $0.delete.percentilesText }),
            ("file size per 1k items (KiB)", { String(format: "%.0f", $0.bytesPerThousand / 1024) }),
        ]
        let labelWidth = rows.map(\.0.count).max()! + 2
        let cells = rows.map { row in results.map(row.1) }
        let cellWidth = max(12, cells.joined().map(\.count).max()! + 2)
        print("")
        for (row, values) in zip(rows, cells) {
            let label = row.0.padding(toLength: labelWidth, withPad: " ", startingAt: 0)
            print(label + values.map { String(repeating: " ", count: max(0, cellWidth - $0.count)) + $0 }.joined())
        }
    }

    private static func account(_ index: Int) -> String { "user\(index)@example.com" }
    private static func service(_ index: Int) -> String { "service-\(index % 100)" }
    private static func label(_ index: Int) -> String { "Label \(index % 50)" }

    private static func item(_ index: Int) -> WireDictionary {
        [
            WireKey.class: .string(WireKey.classGenericPassword),
            AttributeKey.account: .string(account(index)),
            AttributeKey.service: .string(service(index)),
            AttributeKey.label: .string(label(index)),
            WireKey.valueData: .data(Data("password-\(index)-0123456789abcdef".utf8)),
            WireKey.useKeychain: .string("bench"),
        ]
    }
}

/// A private temporary folder with Keywell's folders inside, removed when released.
private final class ScratchFolder {
    let root: URL
    let paths: KeywellPaths

    init() throws {
        var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("keywell-bench-XXXXXX").utf8CString)
        guard let created = mkdtemp(&template) else { throw ValidationError("cannot create a temporary folder") }
        root = URL(fileURLWithPath: String(cString: created))
        paths = KeywellPaths(
            keychainsDirectory: root.appendingPathComponent("data/keywell/keychains"),
            configDirectory: root.appendingPathComponent("config/keywell"),
            runtimeDirectory: root.appendingPathComponent("run/keywell"))
    }

    deinit {
        try? FileManager.default.removeItem(at: root)
    }
}
