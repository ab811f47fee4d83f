import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSync
import Testing

@Suite struct RecordFileTests {
    let key = SyncKey.random()
    let name = RecordName(machine: machineA, sequence: 7, kind: .record)

    @Test func sealedRecordOpensToTheSameChange() throws {
        let record = change(genericItem(modified: 1_000), by: machineA, base: SyncVersion(modified: 5, machine: machineB))
        let bytes = RecordFile.seal(record, name: name, key: key)
        #expect(try RecordFile.open(bytes, name: name, key: key) == [record])
        let tombstone = deletion(of: genericItem(modified: 1), at: 2_000, by: machineA, base: record.version)
        #expect(try RecordFile.open(RecordFile.seal(tombstone, name: name, key: key), name: name, key: key) == [tombstone])
    }

    @Test func noLabelAccountOrSecretIsReadable() throws {
        let item = genericItem(account: "alice-account-x", secret: "hunter2-secret-x", modified: 1_000, label: "Label-Visible-x")
        let bytes = Data(RecordFile.seal(change(item, by: machineA), name: name, key: key))
        for word in ["alice-account-x", "hunter2-secret-x", "Label-Visible-x", "mail.example", "mutt", "org.example.Mail"] {
            let plain = Data(word.utf8)
            #expect(bytes.range(of: plain) == nil)
            #expect(bytes.range(of: Data(plain.map { String(format: "%02x", $0) }.joined().utf8)) == nil)
            #expect(bytes.range(of: Data(plain.base64EncodedString().utf8)) == nil)
        }
    }

    @Test func alteredCutRenamedOrForeignFilesAreRefused() throws {
        let bytes = RecordFile.seal(change(genericItem(modified: 1_000), by: machineA), name: name, key: key)
        var altered = bytes
        altered[altered.count / 2] ^= 1
        #expect(throws: SyncRefusal.self) { try RecordFile.open(altered, name: name, key: key) }
        #expect(throws: SyncRefusal.self) { try RecordFile.open(Array(bytes.dropLast(1)), name: name, key: key) }
        #expect(throws: SyncRefusal.self) { try RecordFile.open(Array(bytes.prefix(10)), name: name, key: key) }
        // Renamed to another sequence, another machine, or a snapshot.
        for other in [RecordName(machine: machineA, sequence: 8, kind: .record), RecordName(machine: machineB, sequence: 7, kind: .record),
                      RecordName(machine: machineA, sequence: 7, kind: .snapshot)] {
            #expect(throws: SyncRefusal.self) { try RecordFile.open(bytes, name: other, key: key) }
        }
        #expect(throws: SyncRefusal.self) { try RecordFile.open(bytes, name: name, key: SyncKey.random()) }
    }

    /// A record that claims another machine's change cannot be written under a name of its own.
    @Test func aFileHoldsOnlyItsMachinesChanges() throws {
        let snapshotName = RecordName(machine: machineA, sequence: 9, kind: .snapshot)
        let records = (0..<3).map { change(genericItem(account: "u\($0)", modified: 100 + Int64($0)), by: machineA) }
        #expect(try RecordFile.open(RecordFile.seal(snapshot: records, name: snapshotName, key: key), name: snapshotName, key: key) == records)
    }

    @Test func headerUnwrapsOnlyWithThePassword() throws {
        let header = try SyncHeader.wrap(key, password: SecretBytes(copying: Array("sync pw".utf8)), kdf: .fastForTests)
        let opened = try SyncHeader.unwrap(header, password: SecretBytes(copying: Array("sync pw".utf8)))
        #expect(opened.id == key.id)
        #expect(opened.key.withUnsafeBytes { Array($0) } == key.key.withUnsafeBytes { Array($0) })
        #expect(throws: KeychainError.self) { try SyncHeader.unwrap(header, password: SecretBytes(copying: Array("wrong".utf8))) }
        #expect(throws: KeychainError.self) { try SyncHeader.unwrap(Array(header.dropLast()), password: SecretBytes(copying: Array("sync pw".utf8))) }
        #expect(throws: KeychainError.self) { try SyncHeader.unwrap(Array("not a header".utf8), password: SecretBytes(count: 0)) }
    }

    @Test func tagsHideTheIdentityAndFollowNFC() {
        let composed = ItemIdentity(itemClass: .genericPassword, key: [.text("caf\u{e9}"), .text("svc"), .text("")])
        let decomposed = ItemIdentity(itemClass: .genericPassword, key: [.text("cafe\u{301}"), .text("svc"), .text("")])
        #expect(key.tag(of: composed) == key.tag(of: decomposed))
        #expect(SyncKey.random().tag(of: composed) != key.tag(of: composed))
    }

    @Test func namesAreReadAsTheContractSays() {
        let hex = machineA.hex
        #expect(RecordName.read("\(hex)-7.rec") == .file(name))
        #expect(RecordName.read("\(hex)-7.sync-conflict-20260101-101010-ABCDEFG.rec") == .file(name))
        #expect(RecordName.read("\(hex)-12.snap") == .file(RecordName(machine: machineA, sequence: 12, kind: .snapshot)))
        for ignored in [".stfolder", "keywell-sync.header", "README.md", ".keywell-tmp-12ab", ".git"] {
            #expect(RecordName.read(ignored) == .ignored)
        }
        for refused in ["\(hex)-07.rec", "\(hex)-7.rec.bak", "\(hex)-x.rec", "renamed.rec", "\(hex.uppercased())-7.rec", "\(hex)-7"] {
            if case .refused = RecordName.read(refused) {} else { Issue.record("\(refused) was not refused") }
        }
    }
}
