import Foundation
import KeywellProtocol
import KeywellSecretService
import KeywellTestSupport
import Testing

@testable import KeywellCore

/// An index edited on disk so that its entry for the bank's item says `evil.example`: SQLite
/// trusts the entry and hands back the bank's row for a lookup of `evil.example`, every MAC valid.
/// A lookup must check each row's own values and answer "not found" (docs/file-format.md,
/// "Indexes are not trusted").
@Suite struct TamperedIndexTests {
    static let bank = "bank.example"
    static let evil = "evil.example"  // as long as `bank`: the edit keeps every length

    /// Closes nothing itself: call once every store of the file is gone. Checkpoints the file,
    /// then replaces `bank` by `evil` in the pages of `index` only; returns how many it replaced.
    static func editIndex(_ index: String, of path: String) throws -> Int {
        try sqlite(path, "PRAGMA wal_checkpoint(TRUNCATE)")
        for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
        let pageSize = Int(try sqlite(path, "PRAGMA page_size"))!
        let pages = try sqlite(path, "SELECT pageno FROM dbstat WHERE name = '\(index)'").split(separator: "\n").compactMap { Int($0) }
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let (from, to) = (Array(bank.utf8), Array(evil.utf8))
        var replaced = 0
        for page in pages {
            let range = (page - 1) * pageSize..<page * pageSize
            var position = range.lowerBound
            while position + from.count <= range.upperBound {
                if bytes[position..<position + from.count].elementsEqual(from) {
                    bytes.replaceSubrange(position..<position + to.count, with: to)
                    replaced += 1
                }
                position += 1
            }
        }
        try bytes.write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        return replaced
    }

    static func unlockedStore(_ environment: TestEnvironment) throws -> KeychainStore {
        let store = try environment.makeStore()
        try store.unlock("login", password: secret("pw"))
        return store
    }

    @Test func aNativeLookupThroughAnEditedIndexFindsNothing() throws {
        let environment = try TestEnvironment()
        do {
            let store = try environment.makeStore(with: ["login"])
            _ = try store.add(genp("alice.example", "web", [WireKey.valueData: data("alice-pw")]))
            _ = try store.add(genp(Self.bank, "web", [WireKey.valueData: data("bank-pw")]))
        }
        let path = environment.path(of: "login")
        #expect(try Self.editIndex("item_genp_key", of: path) == 1)
        #expect(try sqlite(path, "SELECT count(*) FROM item NOT INDEXED WHERE acct = '\(Self.evil)'") == "0", "the rows were not edited")

        let store = try Self.unlockedStore(environment)
        expectStatus(SecStatus.itemNotFound, "the bank's row came back for evil.example") {
            _ = try store.copyMatching(genp(Self.evil, "web") + returnData)
        }
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(genp(Self.evil, "web") + returnAttributes + limitAll) }
        // A change by query must not reach the bank's item either.
        expectStatus(SecStatus.itemNotFound) { try store.delete(genp(Self.evil, "web")) }
        expectStatus(SecStatus.itemNotFound) { try store.update(genp(Self.evil, "web"), ["labl": .string("pwned")]) }
        // Still found by what it holds through the index left alone (case-insensitive: the folded one).
        let folded = try store.copyMatching(
            genp("BANK.example", "web") + returnData + [WireKey.matchCaseInsensitive: .bool(true)])
        #expect(folded.map { $0[WireKey.valueData]?.dataValue } == [Data("bank-pw".utf8)])
        // Through the edited index its own account finds nothing until the file is repaired, or
        // finds it: never another item.
        switch Result(catching: { () throws(KeychainError) in try store.copyMatching(genp(Self.bank, "web") + returnData + limitAll) }) {
        case .success(let exact): #expect(exact.map { $0[WireKey.valueData]?.dataValue } == [Data("bank-pw".utf8)])
        case .failure(let error): #expect(error.status == SecStatus.itemNotFound, "\(error)")
        }
        let alice = try store.copyMatching(genp("alice.example", "web") + returnData)
        #expect(alice.map { $0[WireKey.valueData]?.dataValue } == [Data("alice-pw".utf8)])

        // Locked, attribute searches are answered too, and checked the same way.
        let locked = try environment.makeStore()
        expectStatus(SecStatus.itemNotFound) { _ = try locked.copyMatching(genp(Self.evil, "web") + returnAttributes) }
    }

    @Test func aSecretServiceSearchThroughAnEditedIndexFindsNothing() throws {
        let environment = try TestEnvironment()
        let text = SecretServiceSecret.init(value:contentType:)
        let bankID: UUID
        do {
            let store = try environment.makeStore(with: ["login"])
            _ = try store.secretServiceCreateItem(
                in: "login", label: "Alpha", attributes: ["server": "alpha.example", "user": "you"], type: nil,
                secret: text(Data("alpha-pw".utf8), "text/plain"), replace: false)
            bankID = try store.secretServiceCreateItem(
                in: "login", label: "Bank", attributes: ["server": Self.bank, "user": "me"], type: nil,
                secret: text(Data("bank-pw".utf8), "text/plain"), replace: false).id
        }
        let path = environment.path(of: "login")
        #expect(try Self.editIndex("item_attribute_lookup", of: path) == 1)
        // Read by primary key (the table itself): the bank's own row still says bank.example.
        #expect(try sqlite(path, "SELECT value FROM item_attribute WHERE item_id = 2 AND name = 'server'") == Self.bank)

        let locked = try environment.makeStore()
        #expect(try locked.secretServiceSearch(["server": Self.evil], in: "login") == [], "locked")
        let store = try Self.unlockedStore(environment)
        #expect(try store.secretServiceSearch(["server": Self.evil], in: "login") == [], "the bank's item came back for evil.example")
        #expect(try store.secretServiceSearch(["server": Self.evil, "user": "me"], in: "login") == [])
        // Still found by what it holds, through the entries left alone.
        #expect(try store.secretServiceSearch(["user": "me"], in: "login") == [bankID])
        // Creating evil.example's item "in place of" an identical one must not overwrite the bank's secret.
        let created = try store.secretServiceCreateItem(
            in: "login", label: "Evil", attributes: ["server": Self.evil, "user": "me"], type: nil,
            secret: text(Data("evil-pw".utf8), "text/plain"), replace: true)
        #expect(!created.replaced && created.id != bankID)
        #expect(try store.secretServiceSecrets([bankID], in: "login")[bankID]?.value == Data("bank-pw".utf8))
    }
}
