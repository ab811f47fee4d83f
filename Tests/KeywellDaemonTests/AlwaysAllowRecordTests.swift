import Foundation
import KeywellAccess
import KeywellProtocol
import KeywellTestSupport
import Testing

@testable import KeywellDaemon

/// The record of Always Allow's grants `keywell doctor` lists (docs/access-control.md, "keywell doctor").
@Suite struct AlwaysAllowRecordTests {
    private func item(_ label: String) -> AccessItem {
        AccessItem(keychain: "/k/login.keychain-db", reference: [0xAB, 0x01], label: label)
    }

    @Test func grantsComeBackNewestFirstAndTheFileIsPrivate() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path + "/" + AlwaysAllowRecord.fileName
        let record = AlwaysAllowRecord(path: path)
        try record.record(identity: "exe:/usr/bin/a", items: [item("one")], now: Date(timeIntervalSince1970: 100))
        try record.record(identity: "exe:/usr/bin/b", items: [item("two"), item("three")], now: Date(timeIntervalSince1970: 200))
        let grants = record.grants()
        #expect(grants.map(\.label) == ["three", "two", "one"])
        #expect(grants.last == AlwaysAllowRecord.Grant(time: 100, identity: "exe:/usr/bin/a", keychain: "/k/login.keychain-db",
                                                       label: "one", reference: "ab01"))
        var status = stat()
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o600)
    }

    @Test func aHostileLineIsSkippedAndTheFileStaysUnderItsCap() throws {
        let folder = try TemporaryDirectory()
        let path = folder.path + "/" + AlwaysAllowRecord.fileName
        try Data("not json\n{\"time\":1}\n".utf8).write(to: URL(fileURLWithPath: path))
        let record = AlwaysAllowRecord(path: path)
        let long = String(repeating: "x", count: 4000)
        for round in 0 ..< 100 {
            try record.record(identity: "exe:/usr/bin/p\(round)", items: [item(long)])
        }
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
        #expect(size <= AlwaysAllowRecord.maxBytes)
        let grants = record.grants()
        #expect(grants.first?.identity == "exe:/usr/bin/p99")
        #expect(!grants.isEmpty && grants.count < 100)
        #expect(record.grants(limit: 3).count == 3)
    }
}
