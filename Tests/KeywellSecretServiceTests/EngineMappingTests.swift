import Foundation
import KeywellProtocol
import KeywellSystem
import KeywellTestSupport
import Testing

@testable import KeywellCore
@testable import KeywellSecretService

/// The engine's Secret Service view: one item, whichever face made it.
@Suite struct EngineMappingTests {
    let directory: TemporaryDirectory
    let store: KeychainStore

    init() throws {
        (directory, store) = try makeLoginKeychainStore(prefix: "kwss-engine")
    }

    private func secret(_ text: String, type: String = "text/plain") -> SecretServiceSecret {
        SecretServiceSecret(value: Data(text.utf8), contentType: type)
    }

    @discardableResult
    private func create(_ attributes: [String: String], label: String = "L", value: String = "v",
                        replace: Bool = false) throws -> UUID {
        try store.secretServiceCreateItem(in: "login", label: label, attributes: attributes, type: nil,
                                          secret: secret(value), replace: replace).id
    }

    @Test func secretServiceItemsAreNativeGenericPasswords() throws {
        let id = try create(["service": "mail", "username": "bob", "xdg:schema": "org.example.Mail"], label: "Mail")
        let native = try store.copyMatching(["class": .string("genp"), "svce": .string("mail"), "acct": .string("bob"),
                                             "r_Attributes": .bool(true), "r_Data": .bool(true)])
        #expect(native.count == 1)
        #expect(native[0]["labl"] == .string("Mail"))
        #expect(native[0]["v_Data"] == .data(Data("v".utf8)))
        #expect(native[0]["agrp"] == .string(FreeformItem.accessGroup(for: id)))

        let item = try store.secretServiceItem(id, in: "login")
        #expect(item.attributes == ["service": "mail", "username": "bob", "xdg:schema": "org.example.Mail"])
        #expect(item.label == "Mail" && item.type == "org.example.Mail" && item.madeBySecretService)
    }

    @Test func serviceFallsBackToSchemaThenLabel() throws {
        try create(["xdg:schema": "org.example.S"], label: "one")
        try create(["other": "x"], label: "two")
        #expect(try store.copyMatching(["class": .string("genp"), "svce": .string("org.example.S")]).count == 1)
        #expect(try store.copyMatching(["class": .string("genp"), "svce": .string("two"), "acct": .string("")]).count == 1)
    }

    @Test func identicalServiceAndAccountDoNotCollide() throws {
        let first = try create(["service": "s", "account": "a", "extra": "1"])
        let second = try create(["service": "s", "account": "a", "extra": "2"])
        let third = try create(["service": "s", "account": "a", "extra": "2"], replace: false)
        #expect(Set([first, second, third]).count == 3)
        #expect(try store.secretServiceSearch(["service": "s"], in: "login") == [first, second, third])
        #expect(try store.secretServiceSearch(["extra": "2"], in: "login") == [second, third])
    }

    @Test func replaceKeepsTheItemWithExactlyTheSameAttributes() throws {
        let original = try create(["service": "s", "account": "a"], value: "old")
        let superset = try create(["service": "s", "account": "a", "more": "x"], value: "keep")
        let replaced = try store.secretServiceCreateItem(
            in: "login", label: "New", attributes: ["service": "s", "account": "a"], type: nil,
            secret: secret("new", type: "application/octet-stream"), replace: true)
        #expect(replaced.id == original && replaced.replaced)
        let secrets = try store.secretServiceSecrets([original, superset], in: "login")
        #expect(secrets[original] == secret("new", type: "application/octet-stream"))
        #expect(secrets[superset] == secret("keep"))
        #expect(try store.secretServiceItem(original, in: "login").label == "New")
        // Nothing with exactly these attributes: a new item.
        let fresh = try store.secretServiceCreateItem(in: "login", label: "x", attributes: ["service": "s"], type: nil,
                                                      secret: secret("n"), replace: true)
        #expect(!fresh.replaced)
        // The empty attribute set is a set like any other.
        let empty = try create([:], value: "e1")
        #expect(try store.secretServiceCreateItem(in: "login", label: "x", attributes: [:], type: nil,
                                                  secret: secret("e2"), replace: true).id == empty)
    }

    @Test func searchIsExactAndCaseSensitive() throws {
        let id = try create(["service": "Mail", "account": "É"])
        #expect(try store.secretServiceSearch(["service": "Mail"], in: "login") == [id])
        #expect(try store.secretServiceSearch(["service": "mail"], in: "login").isEmpty)
        #expect(try store.secretServiceSearch(["service": "Mail", "account": "E\u{301}"], in: "login").isEmpty)
        #expect(try store.secretServiceSearch(["service": "Mail", "missing": "x"], in: "login").isEmpty)
        #expect(try store.secretServiceSearch([:], in: "login") == [id])
    }

    @Test func nativeItemsShowDerivedAttributesAndAreFound() throws {
        _ = try store.add(["class": .string("genp"), "svce": .string("svc"), "acct": .string("alice"), "v_Data": .data(Data("pw".utf8))])
        _ = try store.add(["class": .string("inet"), "srvr": .string("example.com"), "acct": .string("bob"),
                           "ptcl": .string("htps"), "port": .integer(8443), "path": .string("/x"), "v_Data": .data(Data("pw2".utf8))])
        let all = try store.secretServiceSearch([:], in: "login")
        #expect(all.count == 2)
        let generic = try store.secretServiceItem(all[0], in: "login")
        #expect(generic.attributes == ["xdg:schema": "org.keywell.generic-password", "service": "svc", "account": "alice"])
        #expect(generic.label == "svc" && !generic.madeBySecretService)
        let internet = try store.secretServiceItem(all[1], in: "login")
        #expect(internet.attributes == ["xdg:schema": "org.keywell.internet-password", "server": "example.com", "user": "bob",
                                        "protocol": "https", "port": "8443", "path": "/x"])

        #expect(try store.secretServiceSearch(["service": "svc", "account": "alice"], in: "login") == [all[0]])
        #expect(try store.secretServiceSearch(["xdg:schema": "org.keywell.internet-password", "protocol": "https",
                                               "port": "8443"], in: "login") == [all[1]])
        #expect(try store.secretServiceSearch(["server": "example.com", "user": "bob"], in: "login") == [all[1]])
        #expect(try store.secretServiceSearch(["service": "svc", "account": "ALICE"], in: "login").isEmpty)
        #expect(try store.secretServiceSearch(["service": "svc", "xdg:schema": "other"], in: "login").isEmpty)
        #expect(try store.secretServiceSecrets(all, in: "login").mapValues(\.value) == [all[0]: Data("pw".utf8), all[1]: Data("pw2".utf8)])
    }

    /// A schema no native item has rules every native item out before any class is tried
    /// (KWallet's reads name theirs); the native schemas, and no schema, still reach them.
    @Test func aForeignSchemaHasNoNativeConditions() throws {
        let inet = ItemClass.internetPassword
        #expect(SecretServiceMapping.nativeConditions(for: ["xdg:schema": "org.qt.keychain", "server": "example.com", "user": "bob"]).isEmpty)
        #expect(SecretServiceMapping.nativeConditions(for: ["xdg:schema": SecretServiceMapping.internetSchema, "server": "example.com"])[inet]?.count == 1)
        #expect(SecretServiceMapping.nativeConditions(for: ["server": "example.com", "user": "bob"])[inet]?.count == 2)
        _ = try store.add(["class": .string("inet"), "srvr": .string("example.com"), "acct": .string("bob"), "v_Data": .data(Data("pw".utf8))])
        let id = try create(["xdg:schema": "org.qt.keychain", "server": "example.com", "user": "bob"])
        #expect(try store.secretServiceSearch(["xdg:schema": "org.qt.keychain", "server": "example.com", "user": "bob"], in: "login") == [id])
        #expect(try store.secretServiceSearch(["server": "example.com", "user": "bob"], in: "login").count == 2)
    }

    /// Pairs that many items share are counted further before one is picked to drive the search;
    /// whichever drives it, the matches and their order are the same.
    @Test func searchesOfCommonPairsFindEveryMatchInOrder() throws {
        var ids: [UUID] = []
        for index in 0..<12 {
            ids.append(try create(["xdg:schema": "org.example.Common", "group": "g", "tag": index < 3 ? "rare" : "t\(index)"]))
        }
        #expect(try store.secretServiceSearch(["xdg:schema": "org.example.Common", "group": "g"], in: "login") == ids)
        #expect(try store.secretServiceSearch(["xdg:schema": "org.example.Common", "group": "g", "tag": "rare"], in: "login")
            == Array(ids.prefix(3)))
        #expect(try store.secretServiceSearch(["group": "g", "tag": "t11"], in: "login") == [ids[11]])
        #expect(try store.secretServiceSearch(["xdg:schema": "org.example.Common", "group": "none"], in: "login").isEmpty)
        #expect(try store.secretServiceSearch(["xdg:schema": "org.example.Common", "tag": "t1"], in: "login").isEmpty)
    }

    /// A search first tries a pair not known to be common; when that pair turns out to be
    /// common it is counted against the others, remembered, and tried last from then on.
    @Test func aCommonPairTriedFirstIsLearnedAndChangesNoResult() throws {
        let group = "g-" + UUID().uuidString  // the memory is shared by every test in the process
        var ids: [UUID] = []
        for index in 0..<12 { ids.append(try create(["group": group, "tag": "t\(index)"])) }
        #expect(CommonPairs.shared.contains([("group", group), ("tag", "t5")]) == [false, false])
        // "group" sorts first, drives the first try, and has more candidates than a try walks.
        #expect(try store.secretServiceSearch(["group": group, "tag": "t5"], in: "login") == [ids[5]])
        #expect(CommonPairs.shared.contains([("group", group), ("tag", "t5")]) == [true, false])
        #expect(try store.secretServiceSearch(["group": group, "tag": "t5"], in: "login") == [ids[5]])
        #expect(try store.secretServiceSearch(["group": group, "tag": "none"], in: "login").isEmpty)
        #expect(try store.secretServiceSearch(["group": group], in: "login") == ids)
    }

    /// Native items matched through derived attributes come in the same statement as the
    /// Secret Service's own, in the order the items were made, each once.
    @Test func nativeAndSecretServiceMatchesComeInOneOrderedList() throws {
        let first = try create(["service": "svc", "account": "a"])
        _ = try store.add(["class": .string("genp"), "svce": .string("svc"), "acct": .string("a"), "v_Data": .data(Data("pw".utf8))])
        let nativeID = try #require(try store.secretServiceItemIDs(in: "login").last)
        #expect(nativeID != first)
        let last = try create(["service": "svc", "account": "a", "extra": "1"])
        #expect(try store.secretServiceSearch(["service": "svc", "account": "a"], in: "login") == [first, nativeID, last])
        #expect(try store.secretServiceSearch(["service": "svc"], in: "login") == [first, nativeID, last])
        // Only the native item has this schema (derived); the others drive the search and fail.
        let schema = ["service": "svc", "account": "a", "xdg:schema": "org.keywell.generic-password"]
        #expect(try store.secretServiceSearch(schema, in: "login") == [nativeID])
        // With more candidates than a first try walks, the pairs are counted: one has no row at
        // all, and the native item is still found.
        for index in 0..<9 { try create(["service": "svc", "account": "a", "n": "\(index)"]) }
        #expect(try store.secretServiceSearch(schema, in: "login") == [nativeID])
    }

    @Test func searchesOfManyPairs() throws {
        let many = Dictionary(uniqueKeysWithValues: (0..<11).map { ("k\($0)", "v\($0)") })
        let id = try create(many)
        try create(many.filter { $0.key != "k10" })
        #expect(try store.secretServiceSearch(many, in: "login") == [id])
    }

    @Test func matchesComeWithTheLockState() throws {
        let id = try create(["service": "s"])
        #expect(try store.secretServiceMatches(["service": "s"], in: "login") == ([id], false))
        try store.lock("login")
        #expect(try store.secretServiceMatches(["service": "s"], in: "login") == ([id], true))
        #expect(try store.secretServiceMatches([:], in: "login") == ([id], true))
        #expect(throws: KeychainError.self) { try store.secretServiceMatches(["service": "s"], in: "missing") }
    }

    @Test func secretServiceItemsAreNotMatchedTwice() throws {
        let id = try create(["service": "svc", "account": "a"])
        #expect(try store.secretServiceSearch(["service": "svc", "account": "a"], in: "login") == [id])
    }

    @Test func attributeChangesRederiveTheNativeIdentityAndKeepTheSecret() throws {
        let id = try create(["service": "old", "account": "a"], value: "kept")
        try store.secretServiceUpdateItem(id, in: "login", label: "Renamed", attributes: ["service": "new", "user": "u"])
        #expect(try store.copyMatching(["class": .string("genp"), "svce": .string("new"), "acct": .string("u")]).count == 1)
        #expect(try store.secretServiceSearch(["service": "old"], in: "login").isEmpty)
        #expect(try store.secretServiceItem(id, in: "login").attributes == ["service": "new", "user": "u"])
        #expect(try store.secretServiceItem(id, in: "login").label == "Renamed")
        #expect(try store.secretServiceSecrets([id], in: "login")[id]?.value == Data("kept".utf8))

        _ = try store.add(["class": .string("genp"), "svce": .string("n"), "v_Data": .data(Data())])
        let native = try store.secretServiceSearch(["service": "n"], in: "login")[0]
        #expect(throws: KeychainError.self) {
            try store.secretServiceUpdateItem(native, in: "login", label: nil, attributes: ["service": "m"])
        }
        try store.secretServiceUpdateItem(native, in: "login", label: "Native label", attributes: nil)
        #expect(try store.secretServiceItem(native, in: "login").label == "Native label")
    }

    @Test func lockedKeychainsAnswerSearchesButNotSecrets() throws {
        let id = try create(["service": "s"])
        try store.lock("login")
        #expect(try store.secretServiceSearch(["service": "s"], in: "login") == [id])
        #expect(try store.secretServiceItem(id, in: "login").attributes == ["service": "s"])
        for attempt in [
            { _ = try store.secretServiceSecrets([id], in: "login") },
            { _ = try create(["service": "t"]) },
            { try store.secretServiceSetSecret(secret("x"), of: id, in: "login") },
            { try store.secretServiceDeleteItem(id, in: "login") },
        ] as [() throws -> Void] {
            #expect { try attempt() } throws: { ($0 as? KeychainError)?.status == SecStatus.interactionNotAllowed }
        }
    }

    @Test func deletingRemovesTheAttributeRows() throws {
        let id = try create(["service": "s", "account": "a"])
        try store.secretServiceDeleteItem(id, in: "login")
        #expect(try store.secretServiceSearch(["service": "s"], in: "login").isEmpty)
        #expect { try store.secretServiceItem(id, in: "login") } throws: { ($0 as? KeychainError)?.status == SecStatus.itemNotFound }
        // A native delete goes through the foreign key's cascade.
        let other = try create(["service": "t", "account": "b"])
        try store.delete(["class": .string("genp"), "svce": .string("t")])
        #expect(try store.secretServiceSearch(["account": "b"], in: "login").isEmpty)
        _ = other
    }

    @Test func contentTypeAndTypeAreKept() throws {
        let id = try store.secretServiceCreateItem(in: "login", label: "x", attributes: ["a": "b"], type: "org.example.T",
                                                   secret: secret("v", type: "application/json"), replace: false).id
        #expect(try store.secretServiceItem(id, in: "login").type == "org.example.T")
        #expect(try store.secretServiceItem(id, in: "login").attributes == ["a": "b"], "hidden rows stay hidden")
        #expect(try store.secretServiceSecrets([id], in: "login")[id]?.contentType == "application/json")
        try store.secretServiceSetSecret(secret("w"), of: id, in: "login")
        #expect(try store.secretServiceSecrets([id], in: "login")[id] == secret("w"))
    }

    @Test func changesSendItemsChanged() throws {
        let events = Protected<[KeychainEvent]>([])
        store.onEvent = { event in events.withLock { $0.append(event) } }
        let id = try create(["service": "s"])
        try store.secretServiceSetSecret(secret("x"), of: id, in: "login")
        try store.secretServiceDeleteItem(id, in: "login")
        #expect(events.withLock { $0 } == Array(repeating: .itemsChanged("login"), count: 3))
    }

    @Test func batchSecretsSkipUnknownItems() throws {
        let ids = try (0..<50).map { try create(["n": "\($0)"], value: "v\($0)") }
        let secrets = try store.secretServiceSecrets(ids + [UUID()], in: "login")
        #expect(secrets.count == 50)
        #expect(secrets[ids[7]]?.value == Data("v7".utf8))
    }
}

/// The associated data that binds sealed secrets must never change its bytes: keychains on disk
/// were sealed with it. Checked against a plain restatement of the format.
@Suite struct AssociatedDataFormatTests {
    private func reference(keychain: UUID, item: KeychainItem) -> Data {
        var data = Data("keywell item secret v1\0".utf8)
        data.append(keychain.data)
        data.append(item.uuid.data)
        data.append(contentsOf: item.itemClass.rawValue.utf8)
        for attribute in item.itemClass.primaryKey {
            data.append(contentsOf: attribute.name.utf8)
            switch item.keyValue(attribute) {
            case .text(let text):
                withUnsafeBytes(of: UInt64(text.utf8.count).bigEndian) { data.append(contentsOf: $0) }
                data.append(contentsOf: text.utf8)
            case .integer(let number): withUnsafeBytes(of: UInt64(bitPattern: number).bigEndian) { data.append(contentsOf: $0) }
            case .bool(let flag): data.append(flag ? 1 : 0)
            case .data(let bytes):
                withUnsafeBytes(of: UInt64(bytes.count).bigEndian) { data.append(contentsOf: $0) }
                data.append(bytes)
            }
        }
        return data
    }

    @Test func unchangedForBothClasses() {
        let keychain = UUID()
        let generic = KeychainItem(rowID: nil, uuid: UUID(), itemClass: .genericPassword,
                                   attributes: [.service: .text("svc é"), .accessGroup: .text("")], sealedSecret: Data())
        let internet = KeychainItem(rowID: nil, uuid: UUID(), itemClass: .internetPassword,
                                    attributes: [.server: .text("example.com"), .port: .integer(443), .protocol: .text("htps"),
                                                 .account: .text("bob")], sealedSecret: Data())
        for item in [generic, internet] {
            #expect(ItemSealing.associatedData(keychain: keychain, item: item) == reference(keychain: keychain, item: item))
        }
    }
}
