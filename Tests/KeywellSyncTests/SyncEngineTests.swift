import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSync
import KeywellTestSupport
import Logging
import Testing

/// Two machines as two stores over private folders, sharing one sync folder (the engine moves
/// no bytes over a network: the folder is the meeting point, as a sync engine would carry it).
final class TwoMachines: @unchecked Sendable {
    let root: TemporaryDirectory
    let folder: String
    let storeA: KeychainStore
    let storeB: KeychainStore
    let engineA: SyncEngine
    let engineB: SyncEngine

    init() throws {
        root = try TemporaryDirectory(prefix: "kwsynce")
        folder = try root.createDirectory("folder")
        let rootPath = root.path
        func store(_ name: String) throws -> KeychainStore {
            let base = URL(fileURLWithPath: rootPath + "/" + name)
            let store = try KeychainStore(paths: KeywellPaths(
                keychainsDirectory: base.appendingPathComponent("data"), configDirectory: base.appendingPathComponent("config"),
                runtimeDirectory: base.appendingPathComponent("run")), kdf: .fastForTests)
            _ = try store.registry.createKeychain("login", password: SecretBytes(copying: Array("pw".utf8)))
            return store
        }
        storeA = try store("a")
        storeB = try store("b")
        engineA = SyncEngine(store: storeA, logger: Logger(label: "a"), hostName: "host-a")
        engineB = SyncEngine(store: storeB, logger: Logger(label: "b"), hostName: "host-b")
    }

    static let password = SecretBytes(copying: Array("sync password".utf8))

    func enableAndJoin() throws {
        try engineA.enable("login", folder: folder, password: Self.password, kdf: .fastForTests)
        try engineB.join("login", folder: folder, password: Self.password)
    }
}

func genericPassword(_ account: String, _ secret: String? = nil, extra: WireDictionary = [:]) -> WireDictionary {
    var item: WireDictionary = [WireKey.class: .string("genp"), "acct": .string(account), "svce": .string("svc"), "labl": .string("L-\(account)")]
    if let secret { item[WireKey.valueData] = .data(Data(secret.utf8)) }
    return item.merging(extra) { $1 }
}

func secret(_ account: String, in store: KeychainStore) -> String? {
    let found: [WireDictionary]
    do {
        found = try store.items.copyMatching(genericPassword(account).merging([WireKey.returnData: .bool(true)]) { $1 })
    } catch {
        if error.status != SecStatus.itemNotFound { Issue.record("reading \(account): \(error)") }
        return nil
    }
    guard case .data(let bytes)? = found.first?[WireKey.valueData] else { return nil }
    return String(decoding: bytes, as: UTF8.self)
}

@Suite(.serialized) struct SyncEngineTests {
    @Test func addsChangesAndDeletesTravel() throws {
        let machines = try TwoMachines()
        _ = try machines.storeA.items.add(genericPassword("before", "s0"))
        try machines.enableAndJoin()

        #expect(secret("before", in: machines.storeB) == "s0")
        _ = try machines.storeA.items.add(genericPassword("alice", "s1"))
        #expect(try machines.engineA.push("login") == 1)
        #expect(try machines.engineA.push("login") == 0)
        _ = try machines.engineB.merge("login")
        #expect(secret("alice", in: machines.storeB) == "s1")
        // B's merge wrote nothing back: what it merged is no local change.
        #expect(try machines.engineB.push("login") == 0)
        try machines.storeA.items.update(genericPassword("alice"), [WireKey.valueData: .data(Data("s2".utf8))])
        _ = try machines.engineA.push("login")
        _ = try machines.engineB.merge("login")
        #expect(secret("alice", in: machines.storeB) == "s2")
        try machines.storeA.items.delete(genericPassword("alice"))
        _ = try machines.engineA.push("login")
        _ = try machines.engineB.merge("login")
        #expect(secret("alice", in: machines.storeB) == nil)
        #expect(try machines.engineB.conflicts("login").isEmpty)
        // A file with the sync tables still passes the schema check of a fresh connection.
        let reopened = try KeychainStore(paths: machines.storeB.paths, kdf: .fastForTests)
        #expect(try SyncEngine(store: reopened, logger: Logger(label: "b2")).settings("login")?.folder == machines.folder)
        try reopened.locking.unlock("login", password: SecretBytes(copying: Array("pw".utf8)))
        #expect(secret("before", in: reopened) == "s0")
    }

    @Test func concurrentChangesConvergeAndKeepTheLoser() throws {
        let machines = try TwoMachines()
        try machines.enableAndJoin()
        _ = try machines.storeA.items.add(genericPassword("bob", "start"))
        _ = try machines.engineA.push("login")
        _ = try machines.engineB.merge("login")
        try machines.storeB.items.update(genericPassword("bob"), [WireKey.valueData: .data(Data("from-b".utf8))])
        Thread.sleep(forTimeInterval: 0.01)
        try machines.storeA.items.update(genericPassword("bob"), [WireKey.valueData: .data(Data("from-a".utf8))])
        _ = try machines.engineA.push("login")
        _ = try machines.engineB.push("login")
        _ = try machines.engineA.merge("login")
        _ = try machines.engineB.merge("login")
        #expect(secret("bob", in: machines.storeA) == "from-a")
        #expect(secret("bob", in: machines.storeB) == "from-a")
        for (engine, label) in [(machines.engineA, "A"), (machines.engineB, "B")] {
            let kept = try engine.conflicts("login")
            #expect(kept.map(\.account) == ["bob"], "on \(label)")
            #expect(kept.first?.machine == "host-b")
            #expect(try kept.first.map { String(decoding: try engine.conflictSecret("login", id: $0.id), as: UTF8.self) } == "from-b")
        }
    }

    @Test func thisDeviceOnlyStaysAndWrongPasswordChangesNothing() throws {
        let machines = try TwoMachines()
        _ = try machines.storeA.items.add(genericPassword("local", "secret-x", extra: ["pdmn": .string("aku")]))
        try machines.engineA.enable("login", folder: machines.folder, password: TwoMachines.password, kdf: .fastForTests)
        let before = try FileManager.default.contentsOfDirectory(atPath: machines.folder)
        #expect(throws: KeychainError.self) {
            try machines.engineB.join("login", folder: machines.folder, password: SecretBytes(copying: Array("wrong".utf8)))
        }
        #expect(try machines.engineB.settings("login") == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: machines.folder).sorted() == before.sorted())
        try machines.engineB.join("login", folder: machines.folder, password: TwoMachines.password)
        #expect(secret("local", in: machines.storeB) == nil)
    }

    @Test func arrivalsAfterAJoinKeepTheJoinersOwnItems() throws {
        let machines = try TwoMachines()
        _ = try machines.storeA.items.add(genericPassword("shared", "a-version"))
        Thread.sleep(forTimeInterval: 0.01)
        _ = try machines.storeB.items.add(genericPassword("shared", "b-version"))
        try machines.enableAndJoin()
        _ = try machines.engineA.merge("login")
        #expect(secret("shared", in: machines.storeA) == "b-version")
        #expect(secret("shared", in: machines.storeB) == "b-version")
        #expect(try machines.engineB.conflicts("login").count == 1)
    }

    /// A lost machine: after a rekey its key opens nothing new, and the others join again.
    @Test func rekeyShutsTheOldKeyOut() throws {
        let machines = try TwoMachines()
        try machines.enableAndJoin()
        let newPassword = SecretBytes(copying: Array("a new sync password".utf8))
        try machines.engineA.rekey("login", password: newPassword, kdf: .fastForTests)
        _ = try machines.storeA.items.add(genericPassword("after-rekey", "fresh"))
        _ = try machines.engineA.push("login")
        let merged = try machines.engineB.merge("login")
        #expect(merged.applied == 0)
        #expect(secret("after-rekey", in: machines.storeB) == nil)
        try machines.engineB.disable("login")
        #expect(throws: KeychainError.self) { try machines.engineB.join("login", folder: machines.folder, password: TwoMachines.password) }
        try machines.engineB.join("login", folder: machines.folder, password: newPassword)
        #expect(secret("after-rekey", in: machines.storeB) == "fresh")
        #expect(try machines.engineB.settings("login")?.refused.isEmpty == true)
    }

    @Test func settingsSurviveTheirRows() throws {
        var settings = SyncSettings(folder: "/f\tolder", machine: machineA, sealedKey: Data([1, 2, 3]))
        settings.nextSequence = 42
        settings.lastMerge = 1_700_000_000_000
        settings.refused = ["x.rec": "it fails to authenticate"]
        settings.floors = [machineB: 7]
        settings.machines = [machineB: .init(name: "host\nb", lastChange: 99)]
        let rows = settings.rows.compactMapValues { $0 }
        let read = try #require(SyncSettings(rows))
        #expect(read.nextSequence == 42 && read.lastMerge == 1_700_000_000_000 && read.floors == [machineB: 7])
        #expect(read.refused == settings.refused)
        #expect(read.machines[machineB]?.name == "host b" && read.machines[machineB]?.lastChange == 99)
        #expect(read.folder == "/f\tolder")
    }
}
