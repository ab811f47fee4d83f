import Foundation
import KeywellProtocol
import KeywellSecretService
import Testing

@testable import KeywellCore

/// What the Secret Service face reads and decides with (docs/secret-service.md, "Access
/// control"): the lists of items by UUID, an explicit list for a sandboxed creator, and what
/// `replace` may do to an item the caller is not trusted by.
@Suite struct SecretServiceAccessTests {
    private let foo = "exe:/usr/bin/foo;sha256=" + String(repeating: "ab", count: 32)
    private let app = "flatpak:org.example.App"

    private func make(_ store: KeychainStore, _ label: String, _ attributes: [String: String], _ value: String,
                      replace: Bool = false, creator: String? = nil, access: AccessList? = nil,
                      replacing: (@Sendable (AccessList) -> SecretServiceReplacement)? = nil) throws -> (id: UUID, replaced: Bool) {
        try store.secretServiceCreateItem(
            in: "login", label: label, attributes: attributes, type: nil,
            secret: SecretServiceSecret(value: Data(value.utf8), contentType: "text/plain"), replace: replace,
            creator: creator, access: access, replacing: replacing)
    }

    @Test func listsAreReadByUUIDLockedOrNot() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let mine = try make(store, "mine", ["k": "1"], "a", creator: foo).id
        let theirs = try make(store, "theirs", ["k": "2"], "b", creator: foo, access: .applications([app])).id
        let open = try make(store, "open", ["k": "3"], "c").id
        let absent = UUID()
        for _ in 0..<2 {
            let lists = try store.secretServiceAccessLists([mine, theirs, open, absent], in: "login")
            #expect(lists.list(of: mine) == .applications([foo]))
            #expect(lists.list(of: theirs) == .applications([app]), "an explicit list wins over the creator")
            #expect(lists.list(of: open) == .anyApplication)
            #expect(lists.list(of: absent) == .anyApplication)
            #expect(lists.keychainPath == environment.path(of: "login"))
            #expect(lists.reference(of: mine) != lists.reference(of: theirs))
            // Works while locked too: what a caller is shown does not need the keys.
            try store.lock("login")
        }
        #expect(try store.secretServiceAccessLists([], in: "login").list(of: mine) == .anyApplication)
    }

    @Test func replaceAsksAboutTheListOfTheItemItWouldReplace() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let attributes = ["service": "git"]
        let original = try make(store, "git", attributes, "real", creator: foo).id
        let seen = LockedLists()
        // Refused: nothing replaced.
        expectStatus(SecStatus.interactionNotAllowed) {
            _ = try make(store, "git", attributes, "planted", replace: true, creator: app, replacing: { seen.add($0); return .refuse })
        }
        #expect(seen.all == [.applications([foo])])
        #expect(try store.secretServiceSecretBatch([original], in: "login")[original]?.value == Data("real".utf8))
        // Made beside it: the original keeps its secret.
        let beside = try make(store, "git", attributes, "own", replace: true, creator: app, access: .applications([app]),
                              replacing: { _ in .makeNew })
        #expect(!beside.replaced && beside.id != original)
        #expect(try store.secretServiceSecretBatch([original], in: "login")[original]?.value == Data("real".utf8))
        // Replaced, keeping its list.
        let again = try make(store, "git2", ["service": "git", "n": "2"], "x", creator: foo)
        let replaced = try make(store, "git2", ["service": "git", "n": "2"], "new", replace: true, creator: app, replacing: { _ in .replace })
        #expect(replaced.replaced && replaced.id == again.id)
        #expect(try store.secretServiceAccessLists([again.id], in: "login").list(of: again.id) == .applications([foo]))
    }

    @Test func anUnidentifiedCreatorsItemTrustsNobodyWhereAccessIsEnforced() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let id = try store.secretServiceCreateItem(
            in: "login", label: "u", attributes: ["k": "u"], type: nil,
            secret: SecretServiceSecret(value: Data("x".utf8), contentType: "text/plain"), replace: false, creatorUnidentified: true).id
        #expect(try store.secretServiceAccessLists([id], in: "login").list(of: id) == .applications([]))
    }
}

private final class LockedLists: @unchecked Sendable {
    private let lock = NSLock()
    private var lists: [AccessList] = []
    func add(_ list: AccessList) { lock.withLock { lists.append(list) } }
    var all: [AccessList] { lock.withLock { lists } }
}
