import DeterministicRandom
import Foundation
import KeywellDBus
import KeywellProtocol

/// Damaged keychain files opened through the daemon: copies of a real keychain cut short or with
/// bytes flipped, each put in the keychains folder under its own name, unlocked and read in full
/// by one long-lived keywelld. Each must give a clear error or exactly the stored secrets, and
/// the daemon must survive all of them.
struct CorruptFileSection: SecurityReportSection {
    let title = "corrupt files"
    static let password = Array("corrupt files password".utf8)
    static let itemCount = 40
    /// What a damaged file may answer (a flipped salt or wrapped key reads as a wrong password,
    /// which is all the header's seal can tell).
    static let clearErrors: Set<String> = ["InvalidKeychain", "Decode", "IO", "AuthFailed", "WrongSecVersion", "ItemNotFound", "WrPerm"]

    func figures(_ context: SecurityCheckContext) throws -> [SecurityFigure] {
        let world = try ActivatedDaemonWorld(daemonPath: context.daemonPath)
        let connection = try world.connect()
        defer { connection.close() }
        let (original, secrets) = try makeOriginal(world, connection)
        let damage = KeychainDamage.plan(count: context.corruptFiles, fileSize: original.count)

        var outcomes = OutcomeTally()
        let control = try open(world, connection, name: "control", bytes: original, secrets: secrets)
        for (index, damaged) in damage.enumerated() {
            outcomes.add(try open(world, connection, name: "corrupt-\(index)", bytes: damaged.apply(to: original), secrets: secrets))
        }
        let controlReads = control == .right(Self.itemCount)
        let errorNames = outcomes.errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let kinds = KeychainDamage.Kind.allCases.map { kind in "\(kind.rawValue): \(damage.filter { $0.kind == kind }.count)" }
        return [
            SecurityFigure(check: "corrupt keychain files unlocked and read in full through keywelld: \(damage.count) damaged copies"
                               + " of a \(Self.itemCount)-item keychain (\(kinds.joined(separator: "; ")))",
                           figure: "\(outcomes.clear) clear errors (\(errorNames.isEmpty ? "none" : errorNames)), \(outcomes.right) opened"
                               + " with the right secrets (\(outcomes.partial) of them missing items), \(outcomes.unclear.count) other answers"
                               + (outcomes.unclear.isEmpty ? "" : " (\(Set(outcomes.unclear).sorted().joined(separator: ", ")))")
                               + "; undamaged control copy: \(controlReads ? "reads all \(Self.itemCount)" : "\(control)")",
                           target: "each a clear error or the right secrets; control reads", met: outcomes.unclear.isEmpty && controlReads),
            SecurityFigure(check: "corrupt files: keywelld crashes or hangs", figure: "\(outcomes.crashes) of \(damage.count)", target: "0",
                           met: outcomes.crashes == 0),
            SecurityFigure(check: "corrupt files: wrong secrets returned", figure: "\(outcomes.wrong) of \(damage.count) files", target: "0",
                           met: outcomes.wrong == 0),
        ]
    }

    /// A real keychain made by the daemon, with the daemon stopped and the WAL folded in, so the
    /// main file holds everything.
    private func makeOriginal(_ world: ActivatedDaemonWorld, _ connection: DBusConnection) throws -> (Data, [String: [UInt8]]) {
        _ = try NativeCalls.call(connection, .createKeychain, [.string("original"), .bytes(Self.password)])
        var secrets: [String: [UInt8]] = [:]
        for index in 0..<Self.itemCount {
            let account = "account-\(index)"
            let secret = Array("secret number \(index) ".utf8) + [UInt8](repeating: UInt8(index), count: 200)
            secrets[account] = secret
            let item: [String: DBusValue] = [WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: .string(account), AttributeKey.service: "corrupt-test",
                                             AttributeKey.label: .string("label \(index)"), WireKey.useKeychain: "original", WireKey.valueData: .bytes(secret)]
            _ = try NativeCalls.call(connection, .add, [.stringVariantDict(item)])
        }
        try world.stopDaemon()
        let path = world.keychainPath("original")
        try SQLiteShell.run(path, "PRAGMA wal_checkpoint(TRUNCATE);")
        for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
        return (try Data(contentsOf: URL(fileURLWithPath: path)), secrets)
    }

    /// Puts `bytes` in the keychains folder as `name`, then Unlock and a read of every item.
    private func open(_ world: ActivatedDaemonWorld, _ connection: DBusConnection, name: String, bytes: Data,
                      secrets: [String: [UInt8]]) throws -> Outcome {
        let path = world.keychainPath(name)
        try bytes.write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        let before = world.livePID()
        let outcome: Outcome
        do {
            _ = try NativeCalls.call(connection, .unlock, [.string(name), .bytes(Self.password)])
            let items = try NativeCalls.matches(connection, [WireKey.class: .string(WireKey.classGenericPassword), WireKey.useKeychain: .string(name)])
            let wrong = items.filter { item in item[AttributeKey.account].flatMap { secrets[String(decoding: $0, as: UTF8.self)] } != item[WireKey.valueData] }
            outcome = wrong.isEmpty ? .right(items.count) : .wrong
        } catch let error as DBusError where FaultRun.isDaemonGone(error) {
            outcome = .crash
        } catch let error as DBusError {
            let short = error.name.replacingOccurrences(of: KeywellNames.errorPrefix, with: "")
            outcome = error.name.hasPrefix(KeywellNames.errorPrefix) && Self.clearErrors.contains(short) ? .clear(short) : .unclear(error.name)
        }
        // A daemon that died (and was activated again) is a crash even if the call looked fine.
        let after = world.livePID()
        if after == nil || (before != nil && after != before) { return .crash }
        return outcome
    }

    enum Outcome: Equatable {
        case right(Int), wrong, clear(String), unclear(String), crash
    }

    struct OutcomeTally {
        var right = 0, partial = 0, wrong = 0, crashes = 0
        var errors: [String: Int] = [:]
        var unclear: [String] = []
        var clear: Int { errors.values.reduce(0, +) }

        mutating func add(_ outcome: Outcome) {
            switch outcome {
            case .right(let count):
                right += 1
                if count < CorruptFileSection.itemCount { partial += 1 }
            case .wrong: wrong += 1
            case .crash: crashes += 1
            case .clear(let name): errors[name, default: 0] += 1
            case .unclear(let name): unclear.append(name)
            }
        }
    }
}

/// One way of damaging a keychain file, drawn from a fixed seed so a failing run repeats.
struct KeychainDamage {
    enum Kind: String, CaseIterable {
        case truncated = "cut short at a random offset"
        case sqliteHeader = "1–4 bytes flipped in the SQLite header"
        case firstPages = "1–4 bytes flipped in the first 3 pages (schema, keychain header)"
        case anywhere = "1–4 bytes flipped anywhere"
    }

    let kind: Kind
    /// Truncation: the new length. Flips: (offset, xor mask).
    let cut: Int
    let flips: [(Int, UInt8)]

    func apply(to original: Data) -> Data {
        if kind == .truncated { return original.prefix(cut) }
        var damaged = original
        for (offset, mask) in flips { damaged[damaged.startIndex + offset] ^= mask }
        return damaged
    }

    static func plan(count: Int, fileSize: Int, seed: UInt64 = 0x6b65_7977_656c_6c21) -> [KeychainDamage] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { index in
            let kind = Kind.allCases[index % Kind.allCases.count]
            let region: Range<Int>
            switch kind {
            case .truncated:
                return KeychainDamage(kind: kind, cut: Int.random(in: 0..<fileSize, using: &generator), flips: [])
            case .sqliteHeader: region = 0..<100
            case .firstPages: region = 100..<min(3 * 4096, fileSize)
            case .anywhere: region = 0..<fileSize
            }
            let flips = (0..<Int.random(in: 1...4, using: &generator)).map { _ in
                (Int.random(in: region, using: &generator), UInt8.random(in: 1...255, using: &generator))
            }
            return KeychainDamage(kind: kind, cut: fileSize, flips: flips)
        }
    }
}

/// The sqlite3 command-line shell on one file.
enum SQLiteShell {
    static func run(_ path: String, _ sql: String) throws {
        guard try ReportChild.run("/usr/bin/sqlite3", [path, sql]) == 0 else { throw BenchmarkFailure("sqlite3 \(sql) failed on \(path)") }
    }
}
