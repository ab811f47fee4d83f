import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

@Suite struct ItemUpdateDeleteTests {
    @Test func updateChangesEveryMatchAndSetsMdat() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        for index in 0..<3 { _ = try store.add(genp("user\(index)", "s", [WireKey.valueData: data("pw\(index)")])) }
        _ = try store.add(genp("other", "t"))
        let before = try store.copyMatching(genp("user1", "s") + returnAttributes)[0]
        Thread.sleep(forTimeInterval: 0.005)
        let events = EventRecorder(store)
        // m_Limit does not narrow an update.
        try store.update(
            [WireKey.class: .string("genp"), "svce": .string("s"), WireKey.matchLimit: .string(WireKey.matchLimitOne)],
            ["labl": .string("relabelled")])
        #expect(events.take() == [.itemsChanged("login")])
        let after = try store.copyMatching([WireKey.class: .string("genp"), "labl": .string("relabelled")] + returnAttributes + returnData + limitAll)
        #expect(after.count == 3)
        let user1 = try #require(after.first { $0["acct"] == .string("user1") })
        #expect(user1[WireKey.valueData] == data("pw1"))
        #expect(user1["cdat"] == before["cdat"])
        #expect(user1["mdat"]!.integerValue! > before["mdat"]!.integerValue!)
    }

    @Test func changingTheIdentityOrTheSecretSealsItAgain() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("old", "s", [WireKey.valueData: data("same secret")]))
        try store.update(genp("old", "s"), ["acct": .string("new"), "svce": .string("t")])
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(genp("old", "s")) }
        #expect(try store.copyMatching(genp("new", "t") + returnData) == [[WireKey.valueData: data("same secret")]])
        try store.update(genp("new", "t"), [WireKey.valueData: data("another")])
        #expect(try store.copyMatching(genp("new", "t") + returnData) == [[WireKey.valueData: data("another")]])
        // Survives a new store: the seal matches what is stored.
        let reopened = try environment.makeStore()
        try reopened.unlock("login", password: secret("pw"))
        #expect(try reopened.copyMatching(genp("new", "t") + returnData) == [[WireKey.valueData: data("another")]])
    }

    @Test func updateCollisionsAreDuplicatesAndChangeNothing() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("a", "s"))
        _ = try store.add(genp("b", "s"))
        _ = try store.add(genp("c", "other"))
        expectStatus(SecStatus.duplicateItem) { try store.update(genp("a", "s"), ["acct": .string("b")]) }
        // Two matches made identical collide with each other.
        expectStatus(SecStatus.duplicateItem) { try store.update([WireKey.class: .string("genp"), "svce": .string("s")], ["acct": .string("z")]) }
        #expect(try store.copyMatching([WireKey.class: .string("genp"), "svce": .string("s")] + returnAttributes + limitAll).map { $0["acct"] }
            == [.string("a"), .string("b")])
        expectStatus(SecStatus.itemNotFound) { try store.update(genp("nobody", "s"), ["labl": .string("x")]) }
    }

    @Test func malformedUpdatesAreRefused() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("a", "s"))
        expectStatus(SecStatus.param) { try store.update(genp("a", "s") + returnData, ["labl": .string("x")]) }
        expectStatus(SecStatus.param) { try store.update(genp("a", "s") + returnAttributes, ["labl": .string("x")]) }
        expectStatus(SecStatus.readOnlyAttr) { try store.update(genp("a", "s"), ["mdat": .integer(1)]) }
        expectStatus(SecStatus.readOnlyAttr) { try store.update(genp("a", "s"), ["cdat": .integer(1)]) }
        expectStatus(SecStatus.noSuchAttr) { try store.update(genp("a", "s"), ["srvr": .string("x")]) }
        expectStatus(SecStatus.param) { try store.update(genp("a", "s"), [WireKey.class: .string("inet")]) }
        expectStatus(SecStatus.param) { try store.update(genp("a", "s"), [WireKey.useKeychain: .string("login")]) }
        expectStatus(SecStatus.param) { try store.update(genp("a", "s"), ["labl": .integer(3)]) }
        expectStatus(SecStatus.param) { try store.update(["acct": .string("a")], ["labl": .string("x")]) }
        #expect(try store.copyMatching(genp("a", "s") + returnAttributes)[0]["labl"] == nil)
    }

    @Test func updateAndDeleteAreAllOrNothingAcrossKeychains() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["a", "b"])
        try store.setSearchList(["a", "b"])
        for name in ["a", "b"] {
            _ = try store.add(genp("x", "s", [WireKey.useKeychain: .string(name)]))
        }
        _ = try store.add(genp("only a", "s", [WireKey.useKeychain: .string("a")]))
        try store.lock("b")
        let events = EventRecorder(store)
        expectStatus(SecStatus.interactionNotAllowed) { try store.update(genp("x", "s"), ["labl": .string("changed")]) }
        expectStatus(SecStatus.interactionNotAllowed) { try store.delete(genp("x", "s")) }
        #expect(events.take() == [])
        #expect(try store.copyMatching(genp("x", "s") + returnAttributes + limitAll).map { $0["labl"] } == [nil, nil])
        // A locked keychain without a match does not stop the call.
        try store.update(genp("only a", "s"), ["labl": .string("changed")])
        try store.delete(genp("only a", "s"))
        #expect(events.take() == [.itemsChanged("a"), .itemsChanged("a")])

        try store.unlock("b", password: secret("pw"))
        try store.update(genp("x", "s"), ["labl": .string("both")])
        #expect(events.take().filter { if case .itemsChanged = $0 { true } else { false } } == [.itemsChanged("a"), .itemsChanged("b")])
        try store.lock("a")
        expectStatus(SecStatus.interactionNotAllowed) { try store.update(genp("x", "s") + [WireKey.useKeychain: .string("a")], ["labl": .string("no")]) }
    }

    @Test func deleteRemovesEveryMatch() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        for index in 0..<4 { _ = try store.add(genp("user\(index)", index < 3 ? "s" : "t")) }
        let events = EventRecorder(store)
        try store.delete([WireKey.class: .string("genp"), "svce": .string("s")])
        #expect(events.take() == [.itemsChanged("login")])
        #expect(try store.info("login")[KeychainInfoKey.itemCount] == .integer(1))
        expectStatus(SecStatus.itemNotFound) { try store.delete([WireKey.class: .string("genp"), "svce": .string("s")]) }
        #expect(events.take() == [])
        // Delete ignores m_Limit and r_* keys.
        try store.delete([WireKey.class: .string("genp"), WireKey.matchLimit: .integer(1)] + returnData)
        #expect(try store.info("login")[KeychainInfoKey.itemCount] == .integer(0))
    }
}
