import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

/// A small tmpfs as the data folder: mounting needs root (CI runs as root); elsewhere the test is
/// disabled, and the reason shows in the test's name.
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
    @Test(.enabled(if: SmallDisk.canMount, "needs root to mount a 2 MiB tmpfs (mount -t tmpfs failed)"))
    func aFullDiskIsDiskFullAndTheKeychainSurvives() throws {
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
}
