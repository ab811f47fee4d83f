import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol

/// The live daemon's memory before and after Lock: a keychain's master key (worked out from the
/// file and the password), a stored secret read once, and the password, searched for in every
/// page of keywelld. While unlocked the key must be found (so the scan is shown to see it);
/// after Lock the key must be nowhere, and the secret and password nowhere but in libdbus's
/// socket receive buffer (copies right after their own length, as D-Bus marshals an `ay`).
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
        // Short values take other paths (Foundation keeps up to 14 bytes inside a Data value).
        let shortSecret = RandomBytes.make(12)
        _ = try NativeCalls.call(connection, .createKeychain, [.string(Self.keychain), .bytes(password)])
        let item: [String: DBusValue] = [WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: "scan", WireKey.useKeychain: .string(Self.keychain)]
        _ = try NativeCalls.call(connection, .add, [.stringVariantDict(item.merging([WireKey.valueData: .bytes(secret)]) { $1 })])
        guard try NativeCalls.matches(connection, item).first?[WireKey.valueData] == secret else {
            throw BenchmarkFailure("the stored secret did not read back")
        }
        let shortItem: [String: DBusValue] = [WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: "short", WireKey.useKeychain: .string(Self.keychain)]
        _ = try NativeCalls.call(connection, .add, [.stringVariantDict(shortItem.merging([WireKey.valueData: .bytes(shortSecret)]) { $1 })])
        guard try NativeCalls.matches(connection, shortItem).first?[WireKey.valueData] == shortSecret else {
            throw BenchmarkFailure("the short secret did not read back")
        }
        let key = try KeychainFileAudit.masterKey(ofKeychainAt: world.keychainPath(Self.keychain),
                                                  password: SecretBytes(copying: password))
        let keyBytes = key.withUnsafeBytes { Array($0) }
        guard let pid = world.livePID() else { throw BenchmarkFailure("no keywelld on the bus") }
        let memory = ProcessMemoryScan(pid: pid)
        let unlocked = try memory.occurrences(of: [keyBytes, secret, password, shortSecret])
        _ = try NativeCalls.call(connection, .lock, [.string(Self.keychain)])
        let locked = try memory.occurrences(of: [keyBytes, secret, password, shortSecret])

        return [
            SecurityFigure(check: "memory scan of the live keywelld (root reads /proc/<pid>/mem), unlocked: the scan sees the key",
                           figure: "master key found \(unlocked[0].count)×, stored secret \(unlocked[1].count)×, password \(unlocked[2].count)×",
                           target: "master key found", met: unlocked[0].count > 0),
            SecurityFigure(check: "after Lock: the keychain's 32-byte master key in the daemon's memory",
                           figure: "\(locked[0].summary), \(locked[0].count * keyBytes.count) bytes", target: "0",
                           met: locked[0].count == 0),
            // The daemon wipes every byte array of a call once it is done (its values, libdbus's
            // message buffers); what libdbus's socket reader keeps of past messages it cannot reach.
            SecurityFigure(check: "after Lock: a stored secret (32 random bytes, written and read once over D-Bus) in the daemon's values, message buffers and freed memory",
                           figure: Self.outsideWire(locked[1]), target: "0", met: locked[1].count == locked[1].inWireFormat),
            // Foundation keeps values of up to 14 bytes inside each Data value (so inside the
            // dictionaries holding them): the daemon overwrites those slots too.
            SecurityFigure(check: "after Lock: a 12-byte stored secret, likewise",
                           figure: Self.outsideWire(locked[3]), target: "0", met: locked[3].count == locked[3].inWireFormat),
            SecurityFigure(check: "after Lock: the keychain's password (sent with CreateKeychain), likewise",
                           figure: Self.outsideWire(locked[2]), target: "0", met: locked[2].count == locked[2].inWireFormat),
            SecurityFigure(check: "after Lock: the secret and the password in libdbus's socket receive buffer (D-Bus wire format; kept until later messages overwrite it)",
                           figure: "secret \(locked[1].inWireFormat)×, 12-byte secret \(locked[3].inWireFormat)×, password \(locked[2].inWireFormat)×",
                           target: "reported (not defended: see the threat model)", met: true),
        ]
    }
}

extension MemoryScanSection {
    static func outsideWire(_ findings: ProcessMemoryScan.Findings) -> String {
        let outside = findings.count - findings.inWireFormat
        return "\(outside) \(outside == 1 ? "copy" : "copies")" + (outside > 0 ? " (of \(findings.summary))" : "")
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
