import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

@Suite struct ItemQueryTests {
    @Test func limitsDefaultToOneAndAcceptAllOrACount() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        for index in 0..<5 { _ = try store.add(genp("user\(index)", "s", ["labl": .string("shared")])) }
        let query: WireDictionary = [WireKey.class: .string("genp"), "labl": .string("shared")] + returnAttributes
        let first = try store.copyMatching(query)
        #expect(first.count == 1)
        #expect(first[0]["acct"] == .string("user0"))
        #expect(try store.copyMatching(query + [WireKey.matchLimit: .string(WireKey.matchLimitOne)]).count == 1)
        #expect(try store.copyMatching(query + limitAll).map { $0["acct"] } == (0..<5).map { .string("user\($0)") })
        #expect(try store.copyMatching(query + [WireKey.matchLimit: .integer(3)]).count == 3)
        #expect(try store.copyMatching(query + [WireKey.matchLimit: .integer(30)]).count == 5)
        for bad: WireValue in [.integer(0), .integer(-2), .string("many"), .bool(true)] {
            expectStatus(SecStatus.param) { _ = try store.copyMatching(query + [WireKey.matchLimit: bad]) }
        }
    }

    /// A lookup by service and account is answered without SQLite's sorter; the order stays the
    /// order items were added, whatever their access groups sort as.
    @Test func aKeyLookupAcrossAccessGroupsKeepsInsertionOrder() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        for group in ["m", "z", "a"] { _ = try store.add(genp("me", "svc", ["agrp": .string(group), "labl": .string(group)])) }
        let query = genp("me", "svc") + returnAttributes
        #expect(try store.copyMatching(query).map { $0["agrp"] } == [.string("m")])
        #expect(try store.copyMatching(query + limitAll).map { $0["agrp"] } == ["m", "z", "a"].map { .string($0) })
        #expect(try store.copyMatching(query + [WireKey.matchLimit: .integer(2)]).map { $0["agrp"] } == ["m", "z"].map { .string($0) })
        #expect(try store.copyMatching(query + ["labl": .string("z")] + limitAll).map { $0["agrp"] } == [.string("z")])
        // Case-insensitive and partial keys keep SQL's own ordering.
        let folded = genp("ME", "SVC") + returnAttributes + [WireKey.matchCaseInsensitive: .bool(true)] + limitAll
        #expect(try store.copyMatching(folded).map { $0["agrp"] } == ["m", "z", "a"].map { .string($0) })
        #expect(try store.copyMatching([WireKey.class: .string("genp"), "svce": .string("svc")] + returnAttributes + limitAll)
            .map { $0["agrp"] } == ["m", "z", "a"].map { .string($0) })
    }

    @Test func withoutReturnKeysEachMatchIsAnEmptyDictionary() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("a", "s"))
        _ = try store.add(genp("b", "s"))
        #expect(try store.copyMatching([WireKey.class: .string("genp")] + limitAll) == [[:], [:]])
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(genp("c", "s")) }
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching([WireKey.class: .string("inet")]) }
    }

    @Test func matchingIsNFCAndOptionallyCaseInsensitiveForAllOfUnicode() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("\u{E9}cole", "Stra\u{DF}e", ["labl": .string("Caf\u{E9}")]))
        #expect(try store.copyMatching(genp("e\u{301}cole", "Stra\u{DF}e")).count == 1)
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(genp("\u{C9}COLE", "Stra\u{DF}e")) }
        let insensitive: WireDictionary = [WireKey.matchCaseInsensitive: .bool(true)]
        #expect(try store.copyMatching(genp("\u{C9}COLE", "STRASSE") + insensitive).count == 1)
        #expect(try store.copyMatching(genp("E\u{301}cOlE", "strasse") + insensitive).count == 1)
        #expect(try store.copyMatching([WireKey.class: .string("genp"), "labl": .string("CAF\u{C9}")] + insensitive).count == 1)
        #expect(try store.copyMatching(genp("\u{E9}cole", "Stra\u{DF}e") + [WireKey.matchCaseInsensitive: .bool(false)]).count == 1)
        expectStatus(SecStatus.param) { _ = try store.copyMatching(genp("a", "s") + [WireKey.matchCaseInsensitive: .string("yes")]) }
    }

    @Test func everyKindOfAttributeCanBeMatched() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(inet("a", "example.com", ["port": .integer(443), "ptcl": .string("htps"), "invi": .bool(true), "crtr": .string("abcd")]))
        _ = try store.add(inet("b", "example.com"))
        _ = try store.add(genp("g", "s", ["gena": .data(Data([1, 2]))]))
        func accounts(_ query: WireDictionary) throws -> [WireValue?] {
            try store.copyMatching(query + returnAttributes + limitAll).map { $0["acct"] }
        }
        let server: WireDictionary = [WireKey.class: .string("inet"), "srvr": .string("example.com")]
        #expect(try accounts(server + ["port": .integer(443)]) == [.string("a")])
        // An item without a port has port 0, and without a flag counts as false.
        #expect(try accounts(server + ["port": .integer(0)]) == [.string("b")])
        #expect(try accounts(server + ["invi": .bool(false)]) == [.string("b")])
        #expect(try accounts(server + ["invi": .bool(true)]) == [.string("a")])
        #expect(try accounts(server + ["ptcl": .string("htps")]) == [.string("a")])
        #expect(try accounts(server + ["crtr": .integer(0x6162_6364)]) == [.string("a")])
        #expect(try accounts([WireKey.class: .string("genp"), "gena": .data(Data([1, 2]))]) == [.string("g")])
        let created = try #require(try store.copyMatching(genp("g", "s") + returnAttributes)[0]["cdat"])
        #expect(try accounts([WireKey.class: .string("genp"), "cdat": created]) == [.string("g")])
        // An absent non-key attribute matches nothing, not even "".
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(server + ["labl": .string("")]) }
        // A missing key part is "".
        #expect(try accounts(server + ["path": .string("")]) == [.string("a"), .string("b")])
    }

    @Test func searchesFollowTheSearchListOrderAndSkipMissingKeychains() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "a", "b"])
        _ = try store.add(genp("x", "s", [WireKey.valueData: data("from a"), WireKey.useKeychain: .string("a")]))
        _ = try store.add(genp("x", "s", [WireKey.valueData: data("from b"), WireKey.useKeychain: .string("b")]))
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(genp("x", "s")) }

        try store.setSearchList(["missing", "b", "a"])
        #expect(try store.copyMatching(genp("x", "s") + returnData) == [[WireKey.valueData: data("from b")]])
        #expect(try store.copyMatching(genp("x", "s") + returnData + limitAll).count == 2)
        #expect(try store.copyMatching(genp("x", "s") + returnData + [WireKey.matchSearchList: .strings(["gone", "a", "b"])])
            == [[WireKey.valueData: data("from a")]])
        // A repeated keychain is searched once.
        #expect(try store.copyMatching(genp("x", "s") + limitAll + [WireKey.matchSearchList: .strings(["a", "a"])]).count == 1)
        // u_Keychain wins over m_SearchList.
        #expect(try store.copyMatching(genp("x", "s") + returnData + [
            WireKey.matchSearchList: .strings(["a"]), WireKey.useKeychain: .string("b"),
        ]) == [[WireKey.valueData: data("from b")]])
        expectStatus(SecStatus.noSuchKeychain) {
            _ = try store.copyMatching(genp("x", "s") + [WireKey.matchSearchList: .strings(["a"]), WireKey.useKeychain: .string("gone")])
        }
        expectStatus(SecStatus.param) { _ = try store.copyMatching(genp("x", "s") + [WireKey.matchSearchList: .string("a")]) }
    }

    @Test func returnKeychainNamesWhereEachResultWasFound() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["a", "b"])
        try store.setSearchList(["a", "b"])
        _ = try store.add(genp("x", "s", [WireKey.valueData: data("from a"), WireKey.useKeychain: .string("a")]))
        _ = try store.add(genp("x", "s", [WireKey.valueData: data("from b"), WireKey.useKeychain: .string("b")]))
        let named: WireDictionary = [WireKey.returnKeychain: .bool(true)]
        #expect(try store.copyMatching(genp("x", "s") + named) == [[WireKey.useKeychain: .string("a")]])
        #expect(try store.copyMatching(genp("x", "s") + named + returnData + limitAll)
            == [[WireKey.useKeychain: .string("a"), WireKey.valueData: data("from a")],
                [WireKey.useKeychain: .string("b"), WireKey.valueData: data("from b")]])
        // Named as GetSearchList names it: a keychain outside the folder by its path.
        let outside = environment.root.path + "/elsewhere.keychain-db"
        _ = try store.createKeychain(outside, password: SecretBytes(copying: Array("pw".utf8)))
        _ = try store.add(genp("y", "s", [WireKey.useKeychain: .string(outside)]))
        try store.setSearchList(["b", outside])
        #expect(try store.copyMatching(genp("y", "s") + named) == [[WireKey.useKeychain: .string(try store.searchList()[1])]])
        // A secret search skips a locked keychain here too: the result says which one answered.
        try store.setSearchList(["a", "b"])
        try store.lock("a")
        #expect(try store.copyMatching(genp("x", "s") + named + returnData)
            == [[WireKey.useKeychain: .string("b"), WireKey.valueData: data("from b")]])
        expectStatus(SecStatus.param) { _ = try store.copyMatching(genp("x", "s") + [WireKey.returnKeychain: .string("yes")]) }
    }

    @Test func lockedKeychainsShowAttributesButNotSecrets() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["a", "b"])
        try store.setSearchList(["a", "b"])
        _ = try store.add(genp("x", "s", [WireKey.valueData: data("from a"), WireKey.useKeychain: .string("a")]))
        _ = try store.add(genp("x", "s", [WireKey.valueData: data("from b"), WireKey.useKeychain: .string("b")]))
        _ = try store.add(genp("only a", "s", [WireKey.useKeychain: .string("a")]))
        try store.lock("a")

        #expect(try store.copyMatching(genp("x", "s") + returnAttributes)[0]["acct"] == .string("x"))
        #expect(try store.copyMatching(genp("x", "s") + [WireKey.returnPersistentRef: .bool(true)]).count == 1)
        #expect(try store.copyMatching(genp("x", "s")) == [[:]])
        // A secret search skips the locked keychain.
        #expect(try store.copyMatching(genp("x", "s") + returnData + returnAttributes + limitAll).map { $0[WireKey.valueData] }
            == [data("from b")])
        expectStatus(SecStatus.interactionNotAllowed) { _ = try store.copyMatching(genp("only a", "s") + returnData) }
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(genp("nobody", "s") + returnData) }
    }

    @Test func malformedQueriesAreRefused() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("a", "s"))
        let cases: [(OSStatus, WireDictionary)] = [
            (SecStatus.param, ["acct": .string("a")]),
            (SecStatus.noSuchClass, [WireKey.class: .string("cert")]),
            (SecStatus.noSuchAttr, genp("a", "s", ["port": .integer(1)])),
            (SecStatus.param, genp("a", "s", ["whatever": .bool(true)])),
            (SecStatus.param, genp("a", "s", [WireKey.valueData: data("x")])),
            (SecStatus.param, genp("a", "s", ["acct": .bool(true)])),
            (SecStatus.param, genp("a", "s", [WireKey.useKeychain: .strings(["login"])])),
        ]
        for (status, query) in cases {
            expectStatus(status, "\(query)") { _ = try store.copyMatching(query) }
        }
    }
}
