import Foundation
import KeywellProtocol
import KeywellTestSupport
import Testing

@testable import KeywellCore

/// A small tmpfs as the data folder: mounting needs root (CI runs as root); elsewhere that test is
/// disabled, and the reason shows in the test's name (under CI it fails instead). The file-size-limit test needs no mount and
/// always runs, so no machine passes without a disk-full test.
enum SmallDisk {
    static let canMount: Bool = {
        guard let folder = try? TestEnvironment() else { return false }
        let point = folder.root.path + "/probe"
        mkdir(point, 0o700)
        guard mount(point, size: "64k") else { return false }
        unmount(point)
        return true
    }()

    static func mount(_ point: String, size: String) -> Bool {
        (try? run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", point])) != nil
    }

    static func unmount(_ point: String) {
        _ = try? run("/bin/umount", ["-l", point])
    }
}

@Suite(.serialized) struct DiskFullTests {
    @Test(.enabled(if: ContinuousIntegration.runs(if: SmallDisk.canMount), "needs root to mount a 2 MiB tmpfs (mount -t tmpfs failed)"))
    func aFullDiskIsDiskFullAndTheKeychainSurvives() throws {
        try #require(SmallDisk.canMount, "mount -t tmpfs failed: CI runs as root to mount one")
        let environment = try TestEnvironment()
        let dataFolder = environment.root.path + "/data"
        mkdir(dataFolder, 0o700)
        #expect(SmallDisk.mount(dataFolder, size: "2m"))
        defer { SmallDisk.unmount(dataFolder) }

        var store = try environment.makeStore(with: ["login"])
        // Space to give back later: once the disk is full, deleting items needs room too (WAL).
        let ballast = dataFolder + "/ballast"
        try Data(repeating: 0, count: 256 << 10).write(to: URL(fileURLWithPath: ballast))

        var acknowledged: [String: Data] = [:]
        var failure: KeychainError?
        for index in 0..<200 {
            let account = "big-\(index)"
            let value = Data((0..<(64 << 10)).map { UInt8(truncatingIfNeeded: $0 &+ index) })
            do {
                _ = try store.add(genp(account, "disk", [WireKey.valueData: .data(value)]))
                acknowledged[account] = value
            } catch {
                failure = error
                break
            }
        }
        let error = try #require(failure, "2 MiB never filled up")
        #expect(error.status == SecStatus.diskFull, "\(error)")
        #expect(error.detail?.isEmpty == false)
        #expect(!acknowledged.isEmpty)

        func expectEverythingAcknowledged(_ store: KeychainStore, _ moment: String) throws {
            for (account, value) in acknowledged {
                let found = try store.copyMatching(genp(account, "disk") + returnData)
                #expect(found == [[WireKey.valueData: .data(value)]], "\(account) (\(moment))")
            }
        }
        try expectEverythingAcknowledged(store, "full disk")

        // Reopen on the still-full disk: the keychain opens and nothing acknowledged is lost.
        store = try environment.makeStore()
        try store.unlock("login", password: secret("pw"))
        try expectEverythingAcknowledged(store, "reopened while full")

        // Room again: adds work.
        unlink(ballast)
        _ = try store.add(genp("after", "disk", [WireKey.valueData: data("small secret after the disk emptied")]))
        #expect(try store.copyMatching(genp("after", "disk") + returnData).count == 1)
        try expectEverythingAcknowledged(store, "after freeing space")
    }

    /// Without a mount: the engine in its own process (`keywell-bench core-writer`) under a 2 MiB
    /// RLIMIT_FSIZE with SIGXFSZ ignored, where the kernel refuses writes past the limit with
    /// EFBIG, as a disk quota does (EDQUOT) and a full disk (ENOSPC). The limit is a process's,
    /// so it cannot be set on this test process, whose other tests run at the same time.
    @Test func aFileSizeLimitIsDiskFullAndTheKeychainSurvives() throws {
        let environment = try TestEnvironment()
        do {
            let creator = try environment.makeStore(with: ["login"])
            try creator.lock("login")
        }
        let secretBytes = 64 << 10
        func arguments(prefix: String, count: Int) -> [String] {
            CoreWriter.arguments(environment, keychain: "login", prefix: prefix, count: count)
                + ["--secret-bytes", "\(secretBytes)", "--file-size-limit", "\(2 << 20)"]
        }
        func refusal(_ output: Data) -> Substring? {
            String(decoding: output, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("refused ") }
        }

        let (output, writer) = try CoreWriter.run(arguments(prefix: "big", count: 200))
        let acknowledged = CoreWriter.acknowledged(output)
        #expect(writer.signal == nil, "killed by signal \(writer.signal ?? 0) (SIGXFSZ?)")
        #expect(writer.exitCode == 3, "2 MiB never filled up: \(acknowledged.count) acknowledged")
        let refused = try #require(refusal(output), "no refusal: \(String(decoding: output, as: UTF8.self))")
        #expect(refused.hasPrefix("refused \(SecStatus.diskFull) "), "\(refused)")
        #expect(refused.count > "refused \(SecStatus.diskFull) ".count, "no detail: \(refused)")
        #expect(!acknowledged.isEmpty)
        #expect(acknowledged == Array(0..<acknowledged.count))

        // Opened again under the limit: it unlocks, takes more until the main file reaches the
        // limit too (the limit is per file: a checkpoint can make room in the WAL), and then
        // refuses as clearly.
        let (again, secondWriter) = try CoreWriter.run(arguments(prefix: "again", count: 200))
        let acknowledgedAgain = CoreWriter.acknowledged(again)
        #expect(secondWriter.exitCode == 3, "\(secondWriter)")
        #expect(refusal(again)?.hasPrefix("refused \(SecStatus.diskFull) ") == true, "\(String(decoding: again, as: UTF8.self))")

        // No limit here: every acknowledged item is there with its secret, the file is sound, and
        // adds work again.
        #expect(try sqlite(environment.path(of: "login"), "PRAGMA integrity_check") == "ok")
        let store = try environment.makeStore()
        try store.unlock("login", password: secret("pw"))
        for (prefix, indices) in [("big", acknowledged), ("again", acknowledgedAgain)] {
            for index in indices {
                let value = Data((0..<secretBytes).map { UInt8(truncatingIfNeeded: $0 &+ index) })
                let found = try store.copyMatching(genp("\(prefix)-\(index)", "core-writer") + returnData)
                #expect(found == [[WireKey.valueData: .data(value)]], "\(prefix)-\(index)")
            }
        }
        _ = try store.add(genp("after", "disk", [WireKey.valueData: data("small secret after the limit")]))
        #expect(try store.copyMatching(genp("after", "disk") + returnData).count == 1)
    }
}
