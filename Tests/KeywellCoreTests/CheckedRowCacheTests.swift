import Foundation
import KeywellProtocol
import KeywellSecretService
import KeywellTestSupport
import Testing

@testable import KeywellCore

/// The checked rows a screened read keeps between calls (`CheckedRowCache`; docs/file-format.md,
/// "Checked rows kept between reads"): every change to the file, whoever makes it, reaches the
/// next read; a row edited on disk is refused as before; a lock or a trim leaves nothing kept.
@Suite struct CheckedRowCacheTests {
    private static let query = ["server": "bank.example", "user": "me"]
    private let search = FreeformSelection.matching(Self.query, native: [:])

    private func makeItem(_ store: KeychainStore, _ secret: String) throws -> UUID {
        try store.secretServiceCreateItem(
            in: "login", label: "Bank", attributes: Self.query, type: nil,
            secret: SecretServiceSecret(value: Data(secret.utf8), contentType: "text/plain"), replace: false,
            creator: "flatpak:org.example.Me").id
    }

    private func secrets(_ store: KeychainStore, _ selection: FreeformSelection) throws -> [Data?] {
        try store.screenedRead(selection, in: "login", screen: nil, secrets: true).items.map { $0.secret?.value }
    }

    private func keptRows(_ store: KeychainStore) throws -> Int {
        try store.file(at: store.location("login")).checkedRowCount
    }

    /// Reads until the keychain's rows are kept, and once more from them.
    private func readTwice(_ store: KeychainStore, _ selection: FreeformSelection, expecting secret: String, items: Int = 1) throws {
        for _ in 0..<8 { #expect(try secrets(store, selection) == [Data(secret.utf8)]) }
        #expect(try keptRows(store) == items, "the reads kept the keychain's checked rows")
    }

    @Test func aWriteThroughAnotherConnectionReachesTheNextRead() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let id = try makeItem(store, "old")
        try readTwice(store, search, expecting: "old")
        try readTwice(store, .ids([id]), expecting: "old")

        // Another store is another pair of connections, as another process's would be.
        let other = try environment.makeStore()
        try other.unlock("login", password: secret("pw"))
        try other.secretServiceSetSecret(SecretServiceSecret(value: Data("new".utf8), contentType: "text/plain"), of: id, in: "login")
        #expect(try secrets(store, search) == [Data("new".utf8)])
        #expect(try secrets(store, .ids([id])) == [Data("new".utf8)])

        try other.secretServiceUpdateItem(id, in: "login", label: nil, attributes: ["server": "moved.example", "user": "me"])
        #expect(try secrets(store, search) == [], "a search kept from before the edit answered")
        try other.secretServiceDeleteItem(id, in: "login")
        #expect(try secrets(store, .ids([id])) == [], "a deleted item came back from the kept rows")
    }

    /// The kept rows look pairs up by their text, but match byte for byte as the statements do:
    /// "é" written as one code point and as "e" and a combining accent are equal Swift strings,
    /// yet two different values to SQLite, so each search finds its own item only.
    @Test func keptRowsMatchByteForByteNotByEqualText() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        var searches: [(FreeformSelection, String)] = []
        for (value, secret) in [("caf\u{e9}", "composed"), ("cafe\u{301}", "decomposed")] {
            let attributes = ["server": "bank.example", "user": value]
            _ = try store.secretServiceCreateItem(
                in: "login", label: "Bank", attributes: attributes, type: nil,
                secret: SecretServiceSecret(value: Data(secret.utf8), contentType: "text/plain"), replace: false,
                creator: "flatpak:org.example.Me")
            searches.append((.matching(attributes, native: [:]), secret))
        }
        for (search, secret) in searches { try readTwice(store, search, expecting: secret, items: 2) }
        for (search, secret) in searches { #expect(try secrets(store, search) == [Data(secret.utf8)]) }
    }

    /// The kept rows remember their last search's answer, for exactly its pairs: a search right
    /// after it with a pair fewer, a pair more or another value gets its own rows, and asking
    /// again with the same pairs (another dictionary) gets the same ones.
    @Test func theLastSearchAnswersOnlyItsOwnPairs() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let items: [([String: String], String)] = [
            (["server": "bank.example", "user": "me"], "mine"),
            (["server": "bank.example", "user": "you"], "yours"),
            (["server": "bank.example", "user": "me", "port": "443"], "port"),
        ]
        for (attributes, secret) in items {
            _ = try store.secretServiceCreateItem(
                in: "login", label: "Bank", attributes: attributes, type: nil,
                secret: SecretServiceSecret(value: Data(secret.utf8), contentType: "text/plain"), replace: false,
                creator: "flatpak:org.example.Me")
        }
        let mine = FreeformSelection.matching(["server": "bank.example", "user": "me"], native: [:])
        for _ in 0..<8 { _ = try secrets(store, mine) }
        #expect(try keptRows(store) == 3, "the reads kept the keychain's checked rows")
        let expected: [([String: String], Set<String>)] = [
            (["server": "bank.example", "user": "me"], ["mine", "port"]),
            (["user": "me", "server": "bank.example"], ["mine", "port"]),
            (["server": "bank.example"], ["mine", "yours", "port"]),
            (["server": "bank.example", "user": "you"], ["yours"]),
            (["server": "bank.example", "user": "me", "port": "443"], ["port"]),
            (["server": "bank.example", "user": "me", "port": "80"], []),
            (["server": "bank.example", "user": "me"], ["mine", "port"]),
            (["server": "bank.example", "user": "me"], ["mine", "port"]),
        ]
        for (attributes, wanted) in expected {
            let found = try secrets(store, .matching(attributes, native: [:])).map { String(decoding: $0 ?? Data(), as: UTF8.self) }
            #expect(Set(found) == wanted, "search \(attributes)")
            #expect(found.count == wanted.count)
        }
        #expect(try keptRows(store) == 3, "the searches were answered from the kept rows")
    }

    @Test func aWriteThroughThisStoreReachesTheNextRead() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let id = try makeItem(store, "old")
        try readTwice(store, search, expecting: "old")
        try store.secretServiceSetSecret(SecretServiceSecret(value: Data("new".utf8), contentType: "text/plain"), of: id, in: "login")
        #expect(try secrets(store, search) == [Data("new".utf8)])
        let second = try store.secretServiceCreateItem(
            in: "login", label: "Second", attributes: Self.query.merging(["extra": "1"]) { $1 }, type: nil,
            secret: SecretServiceSecret(value: Data("second".utf8), contentType: "text/plain"), replace: false).id
        #expect(try store.screenedRead(search, in: "login", screen: nil, secrets: false).items.map(\.id) == [id, second])
        for _ in 0..<8 { _ = try store.screenedRead(search, in: "login", screen: nil, secrets: false) }
        #expect(try keptRows(store) == 2)
        try store.secretServiceDeleteItem(second, in: "login")
        #expect(try store.screenedRead(search, in: "login", screen: nil, secrets: false).items.map(\.id) == [id])
        #expect(try secrets(store, .ids([second])) == [], "a deleted item came back from the kept rows")
    }

    @Test func aRowEditedBehindTheStoresBackIsRefused() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let id = try makeItem(store, "pw")
        try readTwice(store, search, expecting: "pw")
        try readTwice(store, .ids([id]), expecting: "pw")
        let path = environment.path(of: "login")

        // The sqlite3 shell is another process: its commit must end the kept rows' validity.
        try sqlite(path, "UPDATE item_attribute SET value = 'evil.example' WHERE value = 'bank.example'")
        expectStatus(SecStatus.decode) { _ = try secrets(store, .ids([id])) }
        try sqlite(path, "UPDATE item_attribute SET value = 'bank.example' WHERE value = 'evil.example'")
        try readTwice(store, .ids([id]), expecting: "pw")

        // An access list opened to every application is an edit the MAC sees too.
        try sqlite(path, "UPDATE item SET access = NULL")
        expectStatus(SecStatus.decode) { _ = try secrets(store, search) }
        expectStatus(SecStatus.decode) { _ = try secrets(store, .ids([id])) }
        #expect(try keptRows(store) == 0)
    }

    /// The check before a kept read answers from the WAL index's header while nobody commits,
    /// and sees the next commit of another process (the sqlite3 shell) and of this one.
    @Test func theDataVersionMovesWithEveryCommitOnly() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let id = try makeItem(store, "pw")
        let database = try store.file(at: store.location("login")).database
        let first = try database.dataVersion()
        #expect(try database.dataVersion() == first)
        #expect(database.answersFromWALIndex, "the reading connection's WAL index was not found")
        #expect(try database.dataVersion() == first)

        try sqlite(environment.path(of: "login"), "PRAGMA user_version = 7")
        let afterShell = try database.dataVersion()
        #expect(afterShell != first, "another process's commit went unseen")
        #expect(try database.dataVersion() == afterShell)

        try store.secretServiceSetSecret(SecretServiceSecret(value: Data("new".utf8), contentType: "text/plain"), of: id, in: "login")
        let afterOwn = try database.dataVersion()
        #expect(afterOwn != afterShell, "this process's own commit went unseen")
        #expect(try database.dataVersion() == afterOwn)
        #expect(try secrets(store, .ids([id])) == [Data("new".utf8)])
    }

    @Test func aLockOrATrimLeavesNothingKept() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let id = try makeItem(store, "pw")
        try readTwice(store, .ids([id]), expecting: "pw")
        try store.lock("login")
        #expect(try keptRows(store) == 0)
        let locked = try store.screenedRead(.ids([id]), in: "login", screen: nil, secrets: true)
        #expect(locked.locked && locked.items.map { $0.secret } == [nil])

        try store.unlock("login", password: secret("pw"))
        try readTwice(store, search, expecting: "pw")
        store.lockAll()
        #expect(try keptRows(store) == 0)

        try store.unlock("login", password: secret("pw"))
        try readTwice(store, search, expecting: "pw")
        store.releasePageCaches()
        #expect(try keptRows(store) == 0)
    }

    /// Statement reads under `tag` that cost what a load does.
    private func prime(_ cache: inout CheckedRowCache, _ tag: CheckedRowCache.Tag) {
        let before = cache.wantsLoad(tag)
        cache.spent(32, under: tag)
        let after = cache.wantsLoad(tag)
        #expect(!before && after)
    }

    @Test func theCapsBoundWhatIsKept() {
        var cache = CheckedRowCache()
        let tag = CheckedRowCache.Tag(dataVersion: 1, writes: 0)
        prime(&cache, tag)
        let rows = (0...CheckedRowCache.itemCap).map { _ in CheckedRow.forTests(UUID(), sealedBytes: 0) }
        cache.load(rows, tag: tag, current: tag)
        #expect(!cache.isLoaded, "a keychain over the item cap was kept")
        let again = cache.wantsLoad(tag)
        #expect(!again, "a refused load is tried again under the same tag")
        let big = (0..<4).map { _ in CheckedRow.forTests(UUID(), sealedBytes: CheckedRowCache.byteCap / 3) }
        let next = CheckedRowCache.Tag(dataVersion: 2, writes: 0)
        prime(&cache, next)
        cache.load(big, tag: next, current: next)
        #expect(!cache.isLoaded, "more than the byte cap was kept")
        // Another tag empties it before anything is answered.
        let third = CheckedRowCache.Tag(dataVersion: 3, writes: 0)
        prime(&cache, third)
        cache.load(Array(big.prefix(1)), tag: third, current: third)
        let kept = cache.rows(.ids([big[0].uuid]), current: third)
        #expect(kept?.count == 1)
        let afterWrite = cache.rows(.ids([big[0].uuid]), current: CheckedRowCache.Tag(dataVersion: 3, writes: 1))
        #expect(afterWrite == nil)
        #expect(!cache.isLoaded)
    }
}

extension CheckedRow {
    static func forTests(_ uuid: UUID, sealedBytes: Int) -> CheckedRow {
        CheckedRow(rowID: 1, uuid: uuid, access: .anyApplication, freeform: [],
                   sealed: SealedSecret(associatedData: Data(), sealed: Data(count: sealedBytes)), isNative: false)
    }
}

/// The store remembers the last keychain name it resolved (KWallet's hot path names the same one
/// call after call); two paths Swift's String finds equal but spelt in other bytes are two files.
@Test func theLastLocationIsMatchedByteForByte() throws {
    let environment = try TestEnvironment()
    let store = try environment.makeStore()
    let composed = environment.root.path + "/caf\u{00E9}.keychain-db"
    let decomposed = environment.root.path + "/cafe\u{0301}.keychain-db"
    #expect(composed == decomposed)  // what a String comparison would have said
    let first = try store.location(composed)
    let second = try store.location(decomposed)
    #expect(Array(first.path.utf8) == Array(composed.utf8))
    #expect(Array(second.path.utf8) == Array(decomposed.utf8))
    #expect(Array(try store.location(composed).path.utf8) == Array(composed.utf8))
}
