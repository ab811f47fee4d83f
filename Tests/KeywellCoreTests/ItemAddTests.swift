import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

@Suite struct ItemAddTests {
    @Test func addReturnsNothingUnlessAskedAndThenWhatWasAskedFor() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let events = EventRecorder(store)
        #expect(try store.add(genp("alice", "mail", [WireKey.valueData: data("s3cret")])) == [:])
        #expect(events.take() == [.itemsChanged("login")])

        let before = millisecondsSince1970(Date())
        let result = try store.add(
            genp("bob", "mail", [WireKey.valueData: data("hunter2"), "labl": .string("Bob's mail")])
                + returnData + returnAttributes + [WireKey.returnPersistentRef: .bool(true)])
        #expect(result[WireKey.valueData] == data("hunter2"))
        #expect(result[WireKey.valuePersistentRef]?.dataValue?.count == 37)
        #expect(result[WireKey.class] == .string("genp"))
        #expect(result["acct"] == .string("bob"))
        #expect(result["svce"] == .string("mail"))
        #expect(result["labl"] == .string("Bob's mail"))
        #expect(result["agrp"] == .string(""))
        #expect(result["pdmn"] == .string("ak"))
        let created = try #require(result["cdat"]?.integerValue)
        #expect(created >= before && created <= millisecondsSince1970(Date()))
        #expect(result["mdat"] == result["cdat"])
        #expect(result["desc"] == nil && result["gena"] == nil && result["invi"] == nil)
        // The same shape as a search's result.
        #expect(try store.copyMatching(genp("bob", "mail") + returnData + returnAttributes + [WireKey.returnPersistentRef: .bool(true)]) == [result])
    }

    @Test func everyAttributeRoundTrips() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let genpAttributes: WireDictionary = [
            "labl": .string("label"), "desc": .string("kind"), "icmt": .string("comment"), "crtr": .string("abcd"),
            "type": .string("wxyz"), "gena": .data(Data([0, 1, 2])), "invi": .bool(true), "nega": .bool(false),
            "agrp": .string("group"), "pdmn": .string("aku"),
        ]
        let added = try store.add(genp("a", "s", genpAttributes) + returnAttributes)
        for (key, value) in genpAttributes { #expect(added[key] == value, "\(key)") }

        let inetAttributes: WireDictionary = [
            "srvr": .string("example.com"), "ptcl": .string("htps"), "port": .integer(8443), "path": .string("/login"),
            "sdmn": .string("realm"), "atyp": .string("form"),
        ]
        let inetAdded = try store.add(inet("a", "example.com", inetAttributes) + returnAttributes)
        for (key, value) in inetAttributes { #expect(inetAdded[key] == value, "\(key)") }
        #expect(inetAdded[WireKey.class] == .string("inet"))
    }

    @Test func textKeepsEveryCharacterIncludingNUL() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("nul\u{0}inside", "s", ["labl": .string(""), "gena": .data(Data())]))
        _ = try store.add(genp("nul", "s"))
        let found = try store.copyMatching(genp("nul\u{0}inside", "s") + returnAttributes)
        #expect(found.count == 1)
        #expect(found.first?["acct"] == .string("nul\u{0}inside"))
        #expect(found.first?["labl"] == .string(""))
        #expect(found.first?["gena"] == .data(Data()))
    }

    @Test func alternativeWireTypesAreAccepted() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let added = try store.add([
            WireKey.class: .string("genp"), "acct": data("bytes-account"), "svce": .string("s"),
            "crtr": .integer(0x6162_6364), "type": .integer(0x7778_797A),
        ] + returnAttributes)
        #expect(added["acct"] == .string("bytes-account"))
        #expect(added["crtr"] == .string("abcd"))
        #expect(added["type"] == .string("wxyz"))
        #expect(try store.copyMatching(genp("bytes-account", "s")).count == 1)
    }

    @Test func primaryKeysDecideDuplicates() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("alice", "mail", ["labl": .string("one")]))
        expectStatus(SecStatus.duplicateItem) { _ = try store.add(genp("alice", "mail", ["labl": .string("two")])) }
        // Same account and service in another access group is another item.
        _ = try store.add(genp("alice", "mail", ["agrp": .string("team")]))
        // Missing key parts are "": two items without an account collide.
        _ = try store.add([WireKey.class: .string("genp"), "svce": .string("mail")])
        expectStatus(SecStatus.duplicateItem) { _ = try store.add([WireKey.class: .string("genp"), "svce": .string("mail")]) }
        expectStatus(SecStatus.duplicateItem) { _ = try store.add(genp("", "mail")) }

        _ = try store.add(inet("alice", "example.com", ["ptcl": .string("htps"), "port": .integer(443)]))
        _ = try store.add(inet("alice", "example.com", ["ptcl": .string("htps"), "port": .integer(8443)]))
        _ = try store.add(inet("alice", "example.com", ["ptcl": .string("htps"), "port": .integer(443), "path": .string("/a")]))
        expectStatus(SecStatus.duplicateItem) {
            _ = try store.add(inet("alice", "example.com", ["port": .integer(443), "ptcl": .string("htps"), "labl": .string("x")]))
        }
        // Missing port is 0.
        _ = try store.add(inet("bob", "example.com"))
        expectStatus(SecStatus.duplicateItem) { _ = try store.add(inet("bob", "example.com", ["port": .integer(0)])) }
        // Generic and internet items never collide.
        _ = try store.add(genp("bob", "example.com"))
    }

    @Test func uniquenessComparesNFCButStoresValuesAsGiven() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        let added = try store.add(genp(decomposed, "s") + returnAttributes)
        #expect(added["acct"]?.stringValue?.unicodeScalars.elementsEqual(decomposed.unicodeScalars) == true)
        expectStatus(SecStatus.duplicateItem) { _ = try store.add(genp(composed, "s")) }
        // Case still matters for uniqueness.
        _ = try store.add(genp("CAF\u{C9}", "s"))
    }

    @Test func secretsOfEveryShapeRoundTrip() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let megabyte = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let secrets: [(String, Data)] = [
            ("empty", Data()), ("unicode", Data("pässwörd 🔑 密码".utf8)), ("binary", Data([0, 255, 0, 10])),
            ("megabyte", megabyte),
        ]
        for (account, secret) in secrets {
            _ = try store.add(genp(account, "s", [WireKey.valueData: .data(secret)]))
        }
        _ = try store.add(genp("none given", "s"))
        for (account, secret) in secrets {
            #expect(try store.copyMatching(genp(account, "s") + returnData) == [[WireKey.valueData: .data(secret)]])
        }
        #expect(try store.copyMatching(genp("none given", "s") + returnData) == [[WireKey.valueData: .data(Data())]])
    }

    @Test func addGoesToUKeychainElseTheDefault() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "work"])
        _ = try store.add(genp("a", "s", [WireKey.useKeychain: .string("work")]))
        _ = try store.add(genp("b", "s"))
        #expect(try store.info("work")[KeychainInfoKey.itemCount] == .integer(1))
        #expect(try store.info("login")[KeychainInfoKey.itemCount] == .integer(1))
        try store.setDefaultKeychain("work")
        _ = try store.add(genp("c", "s"))
        #expect(try store.info("work")[KeychainInfoKey.itemCount] == .integer(2))
    }

    @Test func addingToALockedKeychainIsNotAllowed() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        try store.lock("login")
        let events = EventRecorder(store)
        expectStatus(SecStatus.interactionNotAllowed) { _ = try store.add(genp("a", "s")) }
        expectStatus(SecStatus.interactionNotAllowed) { try store.addBatch([genp("a", "s")]) }
        #expect(events.take() == [])
    }

    @Test func malformedAddsAreRefusedWithTheRightStatus() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let cases: [(OSStatus, WireDictionary)] = [
            (SecStatus.param, ["acct": .string("a")]),
            (SecStatus.param, [WireKey.class: .bool(true)]),
            (SecStatus.noSuchClass, [WireKey.class: .string("cert")]),
            (SecStatus.noSuchAttr, genp("a", "s", ["srvr": .string("x")])),
            (SecStatus.noSuchAttr, inet("a", "x", ["svce": .string("s")])),
            (SecStatus.noSuchAttr, inet("a", "x", ["gena": .data(Data())])),
            (SecStatus.readOnlyAttr, genp("a", "s", ["cdat": .integer(0)])),
            (SecStatus.readOnlyAttr, genp("a", "s", ["mdat": .string("x")])),
            (SecStatus.param, genp("a", "s", ["bogus": .string("x")])),
            (SecStatus.param, genp("a", "s", [WireKey.matchLimit: .string(WireKey.matchLimitAll)])),
            (SecStatus.param, genp("a", "s", [WireKey.valuePersistentRef: .data(Data())])),
            (SecStatus.param, genp("a", "s", ["acct": .integer(1)])),
            (SecStatus.param, genp("a", "s", ["acct": .data(Data([0xFF, 0xFE]))])),
            (SecStatus.param, genp("a", "s", ["invi": .string("yes")])),
            (SecStatus.param, genp("a", "s", ["gena": .string("text")])),
            (SecStatus.param, genp("a", "s", ["crtr": .string("abc")])),
            (SecStatus.param, genp("a", "s", ["crtr": .integer(-1)])),
            (SecStatus.param, inet("a", "x", ["ptcl": .integer(1)])),
            (SecStatus.param, inet("a", "x", ["port": .string("443")])),
            (SecStatus.param, inet("a", "x", ["port": .integer(-1)])),
            (SecStatus.param, genp("a", "s", [WireKey.valueData: .string("secret")])),
            (SecStatus.param, genp("a", "s", [WireKey.returnData: .string("yes")])),
            (SecStatus.param, genp("a", "s", [WireKey.useKeychain: .bool(true)])),
        ]
        for (status, dictionary) in cases {
            expectStatus(status, "\(dictionary)") { _ = try store.add(dictionary) }
        }
        #expect(try store.info("login")[KeychainInfoKey.itemCount] == .integer(0))
    }

    @Test func batchesAreAllOrNothing() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "work"])
        let events = EventRecorder(store)
        try store.addBatch((0..<50).map { genp("user\($0)", "s") } + [genp("w", "s", [WireKey.useKeychain: .string("work")])])
        #expect(events.take() == [.itemsChanged("login"), .itemsChanged("work")])
        #expect(try store.copyMatching(genp("user49", "s") + returnData) == [[WireKey.valueData: .data(Data())]])

        expectStatus(SecStatus.duplicateItem) {
            try store.addBatch([genp("w2", "s", [WireKey.useKeychain: .string("work")]), genp("new", "s"), genp("user3", "s")])
        }
        #expect(events.take() == [])
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(genp("new", "s")) }
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(genp("w2", "s")) }
        try store.addBatch([])
    }
}
