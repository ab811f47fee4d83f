import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// The daemon on a full disk: its data folder is a 2 MiB tmpfs (root only; CI is root), and,
/// without a mount on any machine, the running daemon held to a 2 MiB file size limit.
@Suite struct DiskFullDaemonTests {
    static let canMount: Bool = {
        guard let folder = try? TemporaryDirectory(prefix: "kwmount") else { return false }
        let point = folder.path
        guard mountSmallDisk(point, size: "64k") else { return false }
        unmountSmallDisk(point)
        return true
    }()

    static func mountSmallDisk(_ point: String, size: String) -> Bool {
        guard let mount = try? ChildProcess(executable: "/bin/mount", arguments: ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", point]),
              let output = try? mount.wait() else { return false }
        return output.termination.exitCode == 0
    }

    static func unmountSmallDisk(_ point: String) {
        _ = try? ChildProcess(executable: "/bin/umount", arguments: ["-l", point]).wait()
    }

    @Test(.enabled(if: ContinuousIntegration.runs(if: canMount), "needs root to mount a 2 MiB tmpfs (mount -t tmpfs failed)"))
    func aFullDiskIsDiskFullOverDBusAndTheDaemonKeepsServing() throws {
        try #require(Self.canMount, "mount -t tmpfs failed: CI runs as root to mount one")
        let fixture = try DaemonFixture()
        let dataHome = fixture.bus.dataHome
        #expect(Self.mountSmallDisk(dataHome, size: "2m"))
        defer { Self.unmountSmallDisk(dataHome) }
        try fixture.createKeychain("login")
        let pid = try fixture.daemonPID()
        let ballast = dataHome + "/ballast"
        try Data(repeating: 0, count: 256 << 10).write(to: URL(fileURLWithPath: ballast))

        let (acknowledged, failure) = Self.addUntilRefused(fixture)
        let error = try #require(failure, "2 MiB never filled up")
        #expect(error.name == KeywellNames.errorPrefix + "DiskFull", "\(error)")
        #expect(error.message.hasPrefix("\(SecStatus.diskFull): "), "\(error.message)")

        // Same process, still serving, nothing acknowledged lost.
        #expect(try fixture.daemonPID() == pid)
        for (account, secret) in acknowledged {
            let found = try fixture.copyMatching(["class": "genp", "acct": .string(account), "r_Data": true])
            #expect(found.first?["v_Data"]?.bytesValue == secret, "\(account)")
        }
        unlink(ballast)
        try fixture.add(["class": "genp", "acct": "after", "v_Data": .bytes(Array("fits again".utf8))])
    }

    /// The file size limit set on the running daemon from outside (prlimit(1)): writes past it fail
    /// with EFBIG, as a quota does. The daemon must neither die of SIGXFSZ nor lose anything, must
    /// answer DiskFull, and must write again once the limit is lifted.
    @Test func aFileSizeLimitIsDiskFullOverDBusAndTheDaemonKeepsServing() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        let pid = try fixture.daemonPID()
        try Self.setFileSizeLimit(of: pid, to: "\(2 << 20)")

        let (acknowledged, failure) = Self.addUntilRefused(fixture)
        let error = try #require(failure, "2 MiB never filled up")
        #expect(error.name == KeywellNames.errorPrefix + "DiskFull", "\(error)\n\(fixture.daemonLog.suffix(2000))")
        #expect(error.message.hasPrefix("\(SecStatus.diskFull): "), "\(error.message)")
        #expect(!acknowledged.isEmpty)

        #expect(try fixture.daemonPID() == pid)
        for (account, secret) in acknowledged {
            let found = try fixture.copyMatching(["class": "genp", "acct": .string(account), "r_Data": true])
            #expect(found.first?["v_Data"]?.bytesValue == secret, "\(account)")
        }
        try Self.setFileSizeLimit(of: pid, to: "unlimited")
        try fixture.add(["class": "genp", "acct": "after", "v_Data": .bytes(Array("fits again".utf8))])
        #expect(try fixture.daemonPID() == pid)
    }

    /// The soft RLIMIT_FSIZE of process `pid` (`unlimited` or bytes); the hard limit stays.
    static func setFileSizeLimit(of pid: pid_t, to soft: String) throws {
        let prlimit = try ChildProcess(executable: "/usr/bin/prlimit", arguments: ["--pid", "\(pid)", "--fsize=\(soft):"])
        let output = try prlimit.wait()
        guard output.termination.exitCode == 0 else {
            throw TestSupportError("prlimit --fsize=\(soft): failed: \(output)")
        }
    }

    /// Adds 64 KiB secrets until the daemon refuses one (at most 200): what it acknowledged, and
    /// the refusal.
    static func addUntilRefused(_ fixture: DaemonFixture) -> ([String: [UInt8]], DBusError?) {
        var acknowledged: [String: [UInt8]] = [:]
        for index in 0..<200 {
            let secret = (0..<(64 << 10)).map { UInt8(truncatingIfNeeded: $0 &+ index) }
            do {
                try fixture.add(["class": "genp", "acct": .string("big-\(index)"), "v_Data": .bytes(secret)])
                acknowledged["big-\(index)"] = secret
            } catch {
                return (acknowledged, error)
            }
        }
        return (acknowledged, nil)
    }
}
