import Foundation
import KeywellDBus
import KeywellProtocol

/// A keychain on a 2 MiB tmpfs, filled through the daemon until writes fail: every refusal must
/// be a clear DiskFull, nothing acknowledged may be lost (checked while full and after a restart
/// of the daemon on the still-full disk), the file must stay sound, and writes must work again
/// once there is room. Root only (mount).
struct DiskFullSection: SecurityReportSection {
    let title = "disk full"
    static let keychain = "diskfull"
    static let password = Array("disk full password".utf8)
    /// Writes tried after the first refusal: the disk stays full, so each must be refused clearly.
    static let extraAttempts = 10

    func figures(_ context: SecurityCheckContext) throws -> [SecurityFigure] {
        guard geteuid() == 0 else {
            return [SecurityFigure(check: "disk full", figure: "skipped: needs root (mount -t tmpfs)", target: "runs", met: false)]
        }
        let world = try ActivatedDaemonWorld(daemonPath: context.daemonPath)
        let dataHome = world.home + "/.local/share"
        mkdir(world.home + "/.local", 0o700)
        mkdir(dataHome, 0o700)
        try SmallDisk.mount(dataHome, size: "2m")
        defer { withExtendedLifetime(world) { SmallDisk.unmount(dataHome) } }

        let connection = try world.connect()
        defer { connection.close() }
        _ = try NativeCalls.call(connection, .createKeychain, [.string(Self.keychain), .bytes(Self.password)])
        // Room to give back at the end: on a full disk even deleting needs space (WAL).
        let ballast = dataHome + "/ballast"
        try Data(repeating: 0, count: 256 << 10).write(to: URL(fileURLWithPath: ballast))

        var acknowledged: [String: [UInt8]] = [:]
        var refusals: [DBusError] = []
        var index = 0
        while refusals.count <= Self.extraAttempts && index < 400 {
            let account = "big-\(index)"
            let secret = (0..<(64 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
            index += 1
            do {
                _ = try NativeCalls.call(connection, .add, [.stringVariantDict(Self.item(account).merging([WireKey.valueData: .bytes(secret)]) { $1 })])
                acknowledged[account] = secret
            } catch let error as DBusError {
                refusals.append(error)
            }
        }
        let clear = refusals.filter(Self.isClearDiskFull).count
        let lostWhileFull = try Self.lost(acknowledged, connection)

        // A new daemon on the still-full disk: it opens the keychain and has everything.
        let reopened = try restartAndUnlock(world, connection)
        let lostAfterRestart = reopened ? try Self.lost(acknowledged, connection) : acknowledged.count
        let integrity = world.integrityCheck(Self.keychain)
        unlink(ballast)
        let writesAgain = (try? NativeCalls.call(connection, .add, [.stringVariantDict(
            Self.item("after").merging([WireKey.valueData: .bytes(Array("fits again".utf8))]) { $1 })])) != nil

        let refusedNames = Set(refusals.map { $0.name.replacingOccurrences(of: KeywellNames.errorPrefix, with: "") }).sorted()
        return [
            SecurityFigure(check: "disk full: 64 KiB secrets added through keywelld to a keychain on a 2 MiB tmpfs until writes fail, then \(Self.extraAttempts) more",
                           figure: "\(acknowledged.count) acknowledged; \(clear) of \(refusals.count) refusals a clear DiskFull (\(SecStatus.diskFull)) with a message"
                               + (refusedNames == ["DiskFull"] ? "" : "; errors seen: \(refusedNames.joined(separator: ", "))"),
                           target: "every refusal DiskFull", met: refusals.count > Self.extraAttempts && clear == refusals.count),
            SecurityFigure(check: "disk full: acknowledged writes lost (while full / after restarting keywelld on the full disk)",
                           figure: "\(lostWhileFull) / \(lostAfterRestart) of \(acknowledged.count)", target: "0",
                           met: lostWhileFull == 0 && lostAfterRestart == 0 && !acknowledged.isEmpty),
            SecurityFigure(check: "disk full: the keychain opens after the restart; `PRAGMA integrity_check`",
                           figure: "\(reopened ? "opens" : "does not open"); \(integrity)", target: "opens; ok",
                           met: reopened && integrity == "ok"),
            SecurityFigure(check: "disk full: a write once space is freed", figure: writesAgain ? "succeeds" : "fails",
                           target: "succeeds", met: writesAgain),
        ]
    }

    static func item(_ account: String) -> [String: DBusValue] {
        [WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: .string(account), AttributeKey.service: "disk-full", WireKey.useKeychain: .string(keychain)]
    }

    /// errSecDiskFull by name, with the status and a message in the text.
    static func isClearDiskFull(_ error: DBusError) -> Bool {
        error.name == KeywellNames.errorPrefix + "DiskFull" && error.message.hasPrefix("\(SecStatus.diskFull): ")
    }

    /// Acknowledged items that are missing or hold another secret.
    static func lost(_ acknowledged: [String: [UInt8]], _ connection: DBusConnection) throws -> Int {
        var lost = 0
        for (account, secret) in acknowledged {
            let found = try NativeCalls.matches(connection, item(account))
            if found.count != 1 || found[0][WireKey.valueData] != secret { lost += 1 }
        }
        return lost
    }

    /// Stops keywelld; the Unlock activates a new one.
    private func restartAndUnlock(_ world: ActivatedDaemonWorld, _ connection: DBusConnection) throws -> Bool {
        try world.stopDaemon()
        return (try? NativeCalls.call(connection, .unlock, [.string(Self.keychain), .bytes(Self.password)])) != nil
    }
}

/// A small tmpfs mounted over a folder (root only).
enum SmallDisk {
    static func mount(_ point: String, size: String) throws {
        guard run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", point]) == 0 else {
            throw BenchmarkFailure("mount -t tmpfs on \(point) failed")
        }
    }

    /// Lazily: a daemon that still has files open there does not keep the mount.
    static func unmount(_ point: String) { _ = run("/bin/umount", ["-l", point]) }

    private static func run(_ program: String, _ arguments: [String]) -> Int32 {
        (try? ReportChild.run(program, arguments)) ?? -1
    }
}
