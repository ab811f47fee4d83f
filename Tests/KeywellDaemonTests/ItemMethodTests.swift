import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// Add, CopyMatching, Update, Delete through the real daemon: results and error names and codes.
@Suite struct ItemMethodTests {
    @Test func addThenFindEverythingItReturns() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        #expect(try fixture.add(genp("alice", ["v_Data": secret("s3cret")])) == [:])
        let added = try fixture.add(genp("bob", [
            "v_Data": secret("pw"), "labl": "Bob", "gena": .bytes([1, 2]), "invi": true, "crtr": "abcd",
            "r_Attributes": true, "r_Data": true, "r_PersistentRef": true,
        ]))
        #expect(added["v_Data"] == .bytes(Array("pw".utf8)))
        #expect(added["class"] == "genp")
        #expect(added["labl"] == "Bob")
        #expect(added["gena"] == .bytes([1, 2]))
        #expect(added["invi"] == true)
        #expect(added["crtr"] == "abcd")
        #expect(added["agrp"] == "")
        #expect(added["cdat"]?.int64Value != nil, "cdat travels as x milliseconds")
        #expect(added["mdat"]?.int64Value != nil)
        #expect(added["v_PersistentRef"]?.bytesValue?.isEmpty == false)

        let found = try fixture.copyMatching(["class": "genp", "acct": "alice", "r_Data": true])
        #expect(found == [["v_Data": .bytes(Array("s3cret".utf8))]])
        #expect(try fixture.copyMatching(["class": "genp", "m_Limit": "m_LimitAll"]).count == 2)
        #expect(try fixture.copyMatching(["class": "genp", "m_Limit": .uint32(1)]).count == 1, "a count of any integer type")
        #expect(try fixture.copyMatching(["class": "genp", "m_Limit": .int16(1)]) == [[:]], "no r_* key: one empty dict per match")

        let reference = try #require(added["v_PersistentRef"])
        let byReference = try fixture.copyMatching(["v_PersistentRef": reference, "r_Attributes": true])
        #expect(byReference.first?["acct"] == "bob")
    }

    @Test func internetPasswordWireTypes() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        let added = try fixture.add([
            "class": "inet", "acct": "me", "srvr": "example.com", "ptcl": "htps", "atyp": "dflt",
            "port": .uint16(8443), "path": "/x", "nega": false, "v_Data": secret("pw"), "r_Attributes": true,
        ])
        #expect(added["port"] == .uint32(8443), "port travels as u")
        #expect(added["ptcl"] == "htps")
        #expect(added["atyp"] == "dflt")
        #expect(added["nega"] == false)
        let found = try fixture.copyMatching(["class": "inet", "srvr": "example.com", "port": .int64(8443), "r_Attributes": true])
        #expect(found.first?["acct"] == "me")
        // A string attribute may arrive as UTF-8 bytes.
        #expect(try fixture.copyMatching(["class": "inet", "srvr": .bytes(Array("example.com".utf8))]).count == 1)
    }

    @Test func updateAndDelete() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        try fixture.add(genp("a", ["v_Data": secret("1")]))
        try fixture.add(genp("b", ["v_Data": secret("2")]))
        let updated = try fixture.call("Update", [.stringVariantDict(["class": "genp"]),
                                                  .stringVariantDict(["labl": "changed", "v_Data": secret("new")])])
        #expect(updated.isEmpty)
        let all = try fixture.copyMatching(["class": "genp", "m_Limit": "m_LimitAll", "r_Attributes": true, "r_Data": true])
        #expect(all.count == 2)
        #expect(all.allSatisfy { $0["labl"] == "changed" && $0["v_Data"] == .bytes(Array("new".utf8)) })

        try fixture.call("Delete", [.stringVariantDict(["class": "genp", "acct": "a"])])
        #expect(try fixture.copyMatching(["class": "genp", "m_Limit": "m_LimitAll"]).count == 1)
        expectKeychainError("ItemNotFound", SecStatus.itemNotFound) {
            try fixture.call("Delete", [.stringVariantDict(["class": "genp", "acct": "a"])])
        }
        expectKeychainError("ItemNotFound", SecStatus.itemNotFound) {
            try fixture.call("Update", [.stringVariantDict(["class": "genp", "acct": "zz"]), .stringVariantDict(["labl": "x"])])
        }
    }

    @Test func itemErrors() throws {
        let fixture = try DaemonFixture()
        expectKeychainError("NoDefaultKeychain", SecStatus.noDefaultKeychain) { try fixture.add(genp("x")) }
        try fixture.createKeychain("login")
        try fixture.add(genp("x"))
        expectKeychainError("DuplicateItem", SecStatus.duplicateItem) { try fixture.add(genp("x")) }
        expectKeychainError("ItemNotFound", SecStatus.itemNotFound) { _ = try fixture.copyMatching(genp("nobody")) }
        expectKeychainError("NoSuchClass", SecStatus.noSuchClass) { try fixture.add(["class": "cert"]) }
        expectKeychainError("NoSuchAttr", SecStatus.noSuchAttr) { try fixture.add(["class": "inet", "svce": "s"]) }
        expectKeychainError("ReadOnlyAttr", SecStatus.readOnlyAttr) { try fixture.add(genp("y", ["cdat": .int64(5)])) }
        expectKeychainError("ReadOnlyAttr", SecStatus.readOnlyAttr) {
            try fixture.call("Update", [.stringVariantDict(genp("x")), .stringVariantDict(["mdat": .int64(5)])])
        }
        expectKeychainError("Param", SecStatus.param) { try fixture.add(["acct": "no class"]) }
        expectKeychainError("Param", SecStatus.param) { try fixture.add(genp("z", ["bogus": "key"])) }
        expectKeychainError("Param", SecStatus.param) {
            try fixture.call("Update", [.stringVariantDict(genp("x", ["r_Data": true])), .stringVariantDict(["labl": "l"])])
        }
        expectKeychainError("Param", SecStatus.param) { _ = try fixture.copyMatching(["v_PersistentRef": .bytes([1, 2, 3])]) }
        expectKeychainError("NoSuchKeychain", SecStatus.noSuchKeychain) { try fixture.add(genp("q", ["u_Keychain": "absent"])) }
        expectKeychainError("Param", SecStatus.param) { try fixture.add(genp("q", ["u_Keychain": "../bad/name"])) }
    }

    @Test func lockedKeychainRefusesSecretsAndChanges() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        try fixture.add(genp("x", ["v_Data": secret("pw")]))
        try fixture.call("Lock", ["login"])
        #expect(try fixture.copyMatching(genp("x", ["r_Attributes": true])).first?["acct"] == "x", "attributes stay readable")
        expectKeychainError("InteractionNotAllowed", SecStatus.interactionNotAllowed) {
            _ = try fixture.copyMatching(genp("x", ["r_Data": true]))
        }
        expectKeychainError("InteractionNotAllowed", SecStatus.interactionNotAllowed) { try fixture.add(genp("y")) }
        expectKeychainError("InteractionNotAllowed", SecStatus.interactionNotAllowed) {
            try fixture.call("Delete", [.stringVariantDict(genp("x"))])
        }
        expectKeychainError("InteractionNotAllowed", SecStatus.interactionNotAllowed) {
            try fixture.call("Update", [.stringVariantDict(genp("x")), .stringVariantDict(["labl": "l"])])
        }
    }
}
