import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

@Suite struct PersistentRefTests {
    private func reference(_ store: KeychainStore, _ item: WireDictionary) throws -> WireValue {
        let result = try store.add(item + [WireKey.returnPersistentRef: .bool(true)])
        return try #require(result[WireKey.valuePersistentRef])
    }

    @Test func referencesResolveWithOrWithoutClassAndAcrossRestarts() throws {
        let environment = try TestEnvironment()
        var store = try environment.makeStore(with: ["login", "work"])
        let ref = try reference(store, genp("a", "s", [WireKey.valueData: data("pw"), WireKey.useKeychain: .string("work")]))
        _ = try store.add(genp("b", "s", [WireKey.useKeychain: .string("work")]))
        #expect(try store.copyMatching(genp("a", "s") + [WireKey.returnPersistentRef: .bool(true), WireKey.useKeychain: .string("work")])
            == [[WireKey.valuePersistentRef: ref]])

        // "work" is not in the search list; a reference finds its keychain anyway.
        let byRef: WireDictionary = [WireKey.valuePersistentRef: ref]
        #expect(try store.copyMatching(byRef + returnData + returnAttributes)[0][WireKey.class] == .string("genp"))
        #expect(try store.copyMatching(byRef + [WireKey.class: .string("genp")] + returnData) == [[WireKey.valueData: data("pw")]])
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(byRef + [WireKey.class: .string("inet")]) }
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(byRef + [WireKey.class: .string("genp"), "acct": .string("b")]) }
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(byRef + [WireKey.useKeychain: .string("login")]) }

        store = try environment.makeStore()
        #expect(try store.copyMatching(byRef + returnAttributes)[0]["acct"] == .string("a"))
        #expect(try store.copyMatching(genp("a", "s") + [WireKey.returnPersistentRef: .bool(true), WireKey.useKeychain: .string("work")])
            == [[WireKey.valuePersistentRef: ref]])
        try store.unlock("work", password: secret("pw"))
        try store.update(byRef, ["labl": .string("via ref")])
        #expect(try store.copyMatching(byRef + returnAttributes)[0]["labl"] == .string("via ref"))
        try store.delete(byRef)
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(byRef) }
        expectStatus(SecStatus.itemNotFound) { try store.delete(byRef) }
        expectStatus(SecStatus.itemNotFound) { try store.update(byRef, ["labl": .string("x")]) }
        #expect(try store.copyMatching(genp("b", "s") + [WireKey.useKeychain: .string("work")]).count == 1)
    }

    @Test func updatesByReferenceAreCheckedAgainstTheItemsClass() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let ref = try reference(store, genp("a", "s", [WireKey.valueData: data("pw")]))
        let byRef: WireDictionary = [WireKey.valuePersistentRef: ref]
        expectStatus(SecStatus.noSuchAttr) { try store.update(byRef, ["srvr": .string("example.com")]) }
        try store.update(byRef, ["acct": .string("renamed")])
        #expect(try store.copyMatching(byRef + returnData + returnAttributes).first?["acct"] == .string("renamed"))
        #expect(try store.copyMatching(genp("renamed", "s") + returnData) == [[WireKey.valueData: data("pw")]])
    }

    @Test func garbageReferencesAreParam() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let good = try reference(store, genp("a", "s")).dataValue!
        var flippedMagic = good
        flippedMagic[0] ^= 1
        for bytes in [Data(), Data("hello".utf8), good.dropLast(), good + [0], flippedMagic] {
            let query: WireDictionary = [WireKey.valuePersistentRef: .data(Data(bytes))]
            expectStatus(SecStatus.param) { _ = try store.copyMatching(query) }
            expectStatus(SecStatus.param) { try store.update(query, ["labl": .string("x")]) }
            expectStatus(SecStatus.param) { try store.delete(query) }
        }
        expectStatus(SecStatus.param) { _ = try store.copyMatching([WireKey.valuePersistentRef: .string("ref")]) }
        // Well formed, but no such item.
        var unknownItem = good
        unknownItem[unknownItem.count - 1] ^= 1
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching([WireKey.valuePersistentRef: .data(unknownItem)]) }
    }
}
