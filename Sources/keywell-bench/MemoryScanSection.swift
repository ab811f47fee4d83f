import Foundation
import KeywellCore
import KeywellDBus

/// The live daemon's memory before and after Lock: a keychain's master key (worked out from the
/// file and the password), a stored secret read once, and the password, searched for in every
/// page of keywelld. While unlocked the key must be found (so the scan is shown to see it);
/// after Lock none of the three should be anywhere.
struct MemoryScanSection: SecurityReportSection {
    let title = "memory scan"
    static let keychain = "memscan"

    func figures(_ context: SecurityCheckContext) throws -> [SecurityFigure] {
        guard geteuid() == 0 else {
            return [SecurityFigure(check: "memory scan of keywelld", figure: "skipped: needs root (the daemon is not dumpable)",
                                   target: "runs", met: false)]
        }
        let world = try ActivatedDaemonWorld(daemonPath: context.daemonPath)
        let connection = try world.connect()
        defer { connection.close() }
        // Random each run, so nothing found can come from a program image or an earlier run.
        let password = Array("memscan-\(RandomBytes.hex(16))".utf8)
        let secret = RandomBytes.make(32)
        _ = try NativeCalls.call(connection, "CreateKeychain", [.string(Self.keychain), .bytes(password)])
        let item: [String: DBusValue] = ["class": "genp", "acct": "scan", "u_Keychain": .string(Self.keychain)]
        _ = try NativeCalls.call(connection, "Add", [.stringVariantDict(item.merging(["v_Data": .bytes(secret)]) { $1 })])
        guard try NativeCalls.matches(connection, item).first?["v_Data"] == secret else {
            throw BenchmarkFailure("the stored secret did not read back")
        }
        let key = try KeychainFileAudit.masterKey(ofKeychainAt: world.keychainPath(Self.keychain),
                                                  password: SecretBytes(copying: password))
        let keyBytes = key.withUnsafeBytes { Array($0) }
        guard let pid = world.livePID() else { throw BenchmarkFailure("no keywelld on the bus") }
        let memory = ProcessMemoryScan(pid: pid)
        let unlocked = try memory.occurrences(of: [keyBytes, secret, password])
        _ = try NativeCalls.call(connection, "Lock", [.string(Self.keychain)])
        let locked = try memory.occurrences(of: [keyBytes, secret, password])

        return [
            SecurityFigure(check: "memory scan of the live keywelld (root reads /proc/<pid>/mem), unlocked: the scan sees the key",
                           figure: "master key found \(unlocked[0].count)×, stored secret \(unlocked[1].count)×, password \(unlocked[2].count)×",
                           target: "master key found", met: unlocked[0].count > 0),
            SecurityFigure(check: "after Lock: the keychain's 32-byte master key in the daemon's memory",
                           figure: "\(locked[0].summary), \(locked[0].count * keyBytes.count) bytes", target: "0",
                           met: locked[0].count == 0),
            // Not ours alone to wipe: libdbus's message buffers and freed Swift buffers.
            SecurityFigure(check: "after Lock: a stored secret (32 random bytes, written and read once over D-Bus)",
                           figure: locked[1].summary, target: "0", met: locked[1].count == 0),
            SecurityFigure(check: "after Lock: the keychain's password (sent with CreateKeychain)",
                           figure: locked[2].summary, target: "0", met: locked[2].count == 0),
        ]
    }
}

/// Random bytes from the system generator.
enum RandomBytes {
    static func make(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    static func hex(_ count: Int) -> String { make(count).map { String(format: "%02x", $0) }.joined() }
}
