import Foundation
import KeywellProtocol
import KeywellSecretService
import Testing

@testable import KeywellCore

/// What an answer covers besides the items asked about (docs/access-control.md, "One answer per
/// program and list"): the keychain's other items whose list is exactly the asked item's.
@Suite struct SameListItemsTests {
    private let chromium = "exe:/usr/lib/chromium/chromium"
    private let mailer = "exe:/usr/bin/mailer;sha256=" + String(repeating: "ab", count: 32)

    private func make(_ store: KeychainStore, _ label: String, in keychain: String = "login", creator: String? = nil,
                      access: AccessList? = nil) throws -> UUID {
        try store.secretServiceCreateItem(
            in: keychain, label: label, attributes: ["label": label], type: nil,
            secret: SecretServiceSecret(value: Data("s".utf8), contentType: "text/plain"), replace: false,
            creator: creator, access: access).id
    }

    private func asked(_ store: KeychainStore, _ id: UUID, in keychain: String = "login") throws -> AccessItem {
        let lists = try store.secretServiceAccessLists([id], in: keychain)
        return AccessItem(keychain: lists.keychainPath, reference: lists.reference(of: id), label: "").trusting(lists.list(of: id))
    }

    @Test func theOtherItemsOfTheSameListAndKeychainOnly() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "work"])
        let first = try make(store, "site 1", creator: chromium)
        let second = try make(store, "site 2", creator: chromium)
        let third = try make(store, "site 3", creator: chromium)
        _ = try make(store, "mail", creator: mailer)
        _ = try make(store, "shared", access: .applications([chromium, mailer]))
        _ = try make(store, "open")
        _ = try make(store, "site elsewhere", in: "work", creator: chromium)
        let found = store.itemsSharingList(with: [try asked(store, first)], limit: 100)
        #expect(found.map(\.label) == ["site 2", "site 3"])
        #expect(found == [try asked(store, second), try asked(store, third)])
        #expect(found.allSatisfy { $0.trusted == [chromium] && $0.keychain == environment.path(of: "login") })
        // Capped; and found while the keychain is locked too (lists are not secret).
        #expect(store.itemsSharingList(with: [try asked(store, first)], limit: 1).map(\.label) == ["site 2"])
        try store.lock("login")
        #expect(store.itemsSharingList(with: [try asked(store, third)], limit: 100).map(\.label) == ["site 1", "site 2"])
    }

    @Test func listsOfNoProgramOrAnyApplicationHaveNoCompanions() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let nobody = try make(store, "nobody 1", access: .applications([]))
        _ = try make(store, "nobody 2", access: .applications([]))
        let open = try make(store, "open 1")
        _ = try make(store, "open 2")
        #expect(store.itemsSharingList(with: [try asked(store, nobody), try asked(store, open)], limit: 100).isEmpty)
        // References that name no keychain item (another collection's, garbage): none either.
        let stray = AccessItem(keychain: "session", reference: Array(repeating: 7, count: 16), label: "")
        #expect(store.itemsSharingList(with: [stray], limit: 100).isEmpty)
    }
}
