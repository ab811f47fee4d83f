import Foundation
import KeywellCore
import KeywellSync
import KeywellTestSupport
import Testing

@Suite struct SyncFolderTests {
    let key = SyncKey.random()

    func write(_ record: SyncRecord, seq: UInt64, to folder: SyncFolder) throws -> String {
        let name = RecordName(machine: record.version.machine, sequence: seq, kind: .record)
        try folder.write(RecordFile.seal(record, name: name, key: key), as: name.description)
        return name.description
    }

    @Test func damagedFilesAreRefusedAndTheRestMerges() throws {
        let directory = try TemporaryDirectory(prefix: "kwsync")
        let folder = SyncFolder(path: directory.path)
        try folder.check()
        let good = change(genericItem(account: "good", modified: 10), by: machineA)
        let goodFile = try write(good, seq: 1, to: folder)
        let altered = try write(change(genericItem(account: "altered", modified: 11), by: machineA), seq: 2, to: folder)
        let cut = try write(change(genericItem(account: "cut", modified: 12), by: machineA), seq: 3, to: folder)
        let moved = try write(change(genericItem(account: "moved", modified: 13), by: machineA), seq: 4, to: folder)
        var bytes = try #require(try folder.read(altered, limit: 1 << 20))
        bytes[bytes.count - 3] ^= 0x40
        try folder.write(bytes, as: altered)
        try folder.write(Array(try #require(try folder.read(cut, limit: 1 << 20)).dropLast(5)), as: cut)
        #expect(rename(directory.path + "/" + moved, directory.path + "/" + machineA.hex + "-40.rec") == 0)
        #expect(rename(directory.path + "/" + goodFile, directory.path + "/" + machineA.hex + "-1.sync-conflict-20260101-000000-XYZ.rec") == 0)
        try folder.write(Array("hello".utf8), as: "notes.rec")
        let contents = try FolderScan.scan(folder, key: key, me: machineB)
        #expect(contents.records.map(\.record) == [good])
        #expect(Set(contents.refused.map(\.file)) == [altered, cut, machineA.hex + "-40.rec", "notes.rec"])
        #expect(contents.machines[machineA]?.name == good.machineName)
        // Files are written 0600 and leave no temporaries.
        var info = stat()
        #expect(stat(directory.path + "/" + cut, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try folder.names().allSatisfy { !$0.hasPrefix(RecordName.temporaryPrefix) })
    }

    /// A machine that changed 20 items 200 times compacts to one snapshot that merges to the
    /// same state as the whole history, and older files that come back are not merged.
    @Test func compactionKeepsTheLatestAndDropsTheHistory() throws {
        let directory = try TemporaryDirectory(prefix: "kwsync")
        let folder = SyncFolder(path: directory.path)
        var latest: [ItemTag: SyncRecord] = [:]
        var seq: UInt64 = 0
        var kept: [UInt8] = []
        for round in 0..<10 {
            for index in 0..<20 {
                seq += 1
                let item = genericItem(account: "user\(index)", secret: "v\(round)", modified: Int64(seq))
                let record = round == 9 && index < 5
                    ? deletion(of: item, at: Int64(seq), by: machineA, base: latest[key.tag(of: item.identity)]?.version)
                    : change(item, by: machineA, base: latest[key.tag(of: item.identity)]?.version)
                let name = try write(record, seq: seq, to: folder)
                if seq == 3 { kept = try #require(try folder.read(name, limit: 1 << 20)) }
                latest[key.tag(of: item.identity)] = record
            }
        }
        let before = try FolderScan.scan(folder, key: key, me: machineB)
        let full = SyncMerge.plan(local: [:], arrived: before.records.map { (key.tag(of: $0.record.identity), $0.record) })
        let own = try FolderScan.scan(folder, key: key, me: machineA).ownFiles
        #expect(SyncCompaction.isDue(ownFiles: own, liveRecords: latest.count))
        seq += 1
        try SyncCompaction.compact(folder, latest: Array(latest.values), me: machineA, sequence: seq, ownFiles: own, key: key)
        #expect(try folder.names().count == 1)
        #expect(!SyncCompaction.isDue(ownFiles: try FolderScan.scan(folder, key: key, me: machineA).ownFiles, liveRecords: latest.count))
        // A replayed old file is superseded, never merged.
        try folder.write(kept, as: "\(machineA.hex)-3.rec")
        let after = try FolderScan.scan(folder, key: key, me: machineB)
        #expect(after.superseded == ["\(machineA.hex)-3.rec"])
        #expect(after.floors[machineA] == seq)
        let compacted = SyncMerge.plan(local: [:], arrived: after.records.map { (key.tag(of: $0.record.identity), $0.record) })
        #expect(compacted.apply == full.apply)
        #expect(compacted.apply.values.filter(\.isTombstone).count == 5)
    }
}
