import DeterministicRandom
import Foundation
import KeywellProtocol
import KeywellTestSupport
import Testing

@testable import KeywellCore

/// A damaged keychain file (cut short, bytes flipped, not SQLite at all, a folder in its place)
/// must give a clear KeychainError, never a crash and never a secret other than the one stored.
@Suite struct CorruptKeychainFileTests {
    /// What a damaged file may answer: each names the problem (a flipped salt or wrapped key
    /// reads as a wrong password, which is the most the header's seal can tell). Not
    /// `itemNotFound`: the search reads every stored item, so "none" would be a silent loss.
    static let clearStatuses: Set<OSStatus> = [
        SecStatus.invalidKeychain, SecStatus.decode, SecStatus.io, SecStatus.authFailed,
        SecStatus.wrongSecVersion, SecStatus.wrPerm,
    ]

    /// A login keychain with `itemCount` items, closed and checkpointed so that the main file
    /// holds everything; returns its bytes and each account's secret.
    static func makeKeychain(_ environment: TestEnvironment, itemCount: Int = 40) throws -> (Data, [String: Data]) {
        var secrets: [String: Data] = [:]
        do {
            let store = try environment.makeStore(with: ["login"])
            for index in 0..<itemCount {
                let account = "account-\(index)"
                let value = Data("secret number \(index) " .utf8) + Data(repeating: UInt8(index), count: 200)
                secrets[account] = value
                _ = try store.add(genp(account, "corrupt-test", [WireKey.valueData: .data(value), "labl": .string("label \(index)")]))
            }
        }
        let path = environment.path(of: "login")
        try sqlite(path, "PRAGMA wal_checkpoint(TRUNCATE)")
        for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
        return (try Data(contentsOf: URL(fileURLWithPath: path)), secrets)
    }

    /// Opens the keychain anew and reads every item: the secrets read or the KeychainError met.
    static func readEverything(_ environment: TestEnvironment) -> Result<[WireDictionary], KeychainError> {
        do {
            let store = try environment.makeStore()
            try store.unlock("login", password: secret("pw"))
            return .success(try store.copyMatching(
                [WireKey.class: .string(WireKey.classGenericPassword)] + returnData + returnAttributes + limitAll))
        } catch let error as KeychainError {
            return .failure(error)
        } catch {
            Issue.record("not a KeychainError: \(error)")
            return .failure(KeychainError(SecStatus.unimplemented))
        }
    }

    /// The outcome is a clear error, or every stored item, once each, with its own secret: a read
    /// that succeeds with fewer items would lose them silently.
    static func expectClearOrCorrect(
        _ environment: TestEnvironment, _ secrets: [String: Data], _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        switch readEverything(environment) {
        case .failure(let error):
            #expect(clearStatuses.contains(error.status), "\(what): \(error)", sourceLocation: sourceLocation)
            if error.status != SecStatus.authFailed {
                #expect(error.detail != nil, "\(what): \(error) has no detail", sourceLocation: sourceLocation)
            }
        case .success(let items):
            var found: [String: Data] = [:]
            for item in items {
                guard let account = item["acct"]?.stringValue else {
                    Issue.record("\(what): an item without its account: \(item)", sourceLocation: sourceLocation)
                    continue
                }
                #expect(found[account] == nil, "\(what): \(account) read twice", sourceLocation: sourceLocation)
                found[account] = item[WireKey.valueData]?.dataValue ?? Data()
            }
            let lost = secrets.keys.filter { found[$0] == nil }.sorted()
            #expect(lost.isEmpty, "\(what): silently lost \(lost) (the read succeeded without them)", sourceLocation: sourceLocation)
            for (account, value) in found {
                #expect(value == secrets[account], "\(what): wrong secret for \(account)", sourceLocation: sourceLocation)
            }
        }
    }

    /// Each item looked up on its own (through the indexes, where the full read scans the table):
    /// its own secret, or a clear error; "not found" for a stored item is a silent loss.
    static func expectEachLookupClearOrCorrect(
        _ environment: TestEnvironment, _ secrets: [String: Data], _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let store: KeychainStore
        do {
            store = try environment.makeStore()
            try store.unlock("login", password: secret("pw"))
        } catch {
            return  // the open or the unlock refused: expectClearOrCorrect judges that error
        }
        for (account, value) in secrets.sorted(by: { $0.key < $1.key }) {
            do {
                let found = try store.copyMatching(genp(account, "corrupt-test") + returnData + returnAttributes)
                let accounts = found.map { $0["acct"]?.stringValue ?? "?" }
                let owners = found.map { item in secrets.first { $0.value == item[WireKey.valueData]?.dataValue }?.key ?? "nobody's" }
                #expect(found.count == 1 && found.first?[WireKey.valueData]?.dataValue == value,
                        "\(what): lookup of \(account) answered rows of \(accounts) with the secrets of \(owners)",
                        sourceLocation: sourceLocation)
            } catch where error.status == SecStatus.itemNotFound {
                Issue.record("\(what): silently lost \(account) (its lookup finds nothing)", sourceLocation: sourceLocation)
            } catch {
                #expect(clearStatuses.contains(error.status), "\(what): lookup of \(account): \(error)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func aTruncatedFileIsAClearError() throws {
        let environment = try TestEnvironment()
        let (original, secrets) = try Self.makeKeychain(environment)
        let path = environment.path(of: "login")
        let cuts = [0, 1, 16, 99, 100, 101, 512, 4095, 4096, 4097, 8192, original.count / 2, original.count - 4096, original.count - 1]
        for cut in cuts where cut >= 0 && cut < original.count {
            try original.prefix(cut).write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            Self.expectClearOrCorrect(environment, secrets, "cut at \(cut) of \(original.count)")
            for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
        }
    }

    @Test func aZeroLengthFileIsInvalidKeychain() throws {
        let environment = try TestEnvironment()
        _ = try Self.makeKeychain(environment, itemCount: 1)
        let path = environment.path(of: "login")
        try Data().write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        let error = expectStatus(SecStatus.invalidKeychain) { _ = try Self.readEverything(environment).get() }
        #expect(error?.detail?.contains(path) == true)
        // Refusing it did not turn the empty file into a database.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).isEmpty)
    }

    @Test func aFileThatIsNotSQLiteIsInvalidKeychain() throws {
        let environment = try TestEnvironment()
        _ = try Self.makeKeychain(environment, itemCount: 1)
        let path = environment.path(of: "login")
        let text = Data(String(repeating: "this is a shopping list, not a keychain\n", count: 200).utf8)
        for junk in [text, Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 7919) })] {
            try junk.write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            let error = expectStatus(SecStatus.invalidKeychain) { _ = try Self.readEverything(environment).get() }
            #expect(error?.detail?.contains(path) == true)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == junk, "the probe must not write")
        }
    }

    @Test func anSQLiteFileOfAnotherProgramIsInvalidKeychain() throws {
        let environment = try TestEnvironment()
        _ = try Self.makeKeychain(environment, itemCount: 1)
        let path = environment.path(of: "login")
        unlink(path)
        try sqlite(path, "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hello');")
        chmod(path, 0o600)
        expectStatus(SecStatus.invalidKeychain) { _ = try Self.readEverything(environment).get() }
        // A keychain table with NULLs and wrong types where the header's columns should be.
        unlink(path)
        try sqlite(path, "CREATE TABLE keychain (id INTEGER, format_version, uuid, kdf_salt, kdf_ops_limit, kdf_mem_limit, wrap_nonce,"
                       + " wrapped_key, lock_on_sleep, lock_after_seconds); INSERT INTO keychain (id, format_version, uuid) VALUES (1, 'one', x'00');")
        chmod(path, 0o600)
        expectStatus(SecStatus.invalidKeychain) { _ = try Self.readEverything(environment).get() }
    }

    @Test func aFolderWhereTheFileShouldBeIsAClearError() throws {
        let environment = try TestEnvironment()
        _ = try Self.makeKeychain(environment, itemCount: 1)
        let path = environment.path(of: "login")
        unlink(path)
        mkdir(path, 0o700)
        let outcome = Self.readEverything(environment)
        guard case .failure(let error) = outcome else {
            Issue.record("a folder opened as a keychain")
            return
        }
        #expect([SecStatus.invalidKeychain, SecStatus.noSuchKeychain, SecStatus.wrPerm, SecStatus.io].contains(error.status), "\(error)")
        #expect(error.detail != nil)
    }

    /// Flips bytes at random (seeded, so a failure repeats) in the SQLite header, the first pages
    /// (schema, keychain header row) and anywhere else.
    @Test func flippedBytesAreAClearErrorOrTheRightSecrets() throws {
        let environment = try TestEnvironment()
        let (original, secrets) = try Self.makeKeychain(environment)
        let path = environment.path(of: "login")
        var generator = SplitMix64(seed: 0x6b65_7977_656c_6c21)
        let regions: [(String, Range<Int>)] = [
            ("SQLite header", 0..<100), ("first pages", 100..<min(3 * 4096, original.count)), ("anywhere", 0..<original.count),
        ]
        let pageSize = Int(try sqlite(path, "PRAGMA page_size"))!
        let pageOwners = try Self.pageOwners(path)
        for (name, region) in regions {
            for trial in 0..<25 {
                var damaged = original
                let flips = Int.random(in: 1...4, using: &generator)
                var pages: Set<String> = []
                for _ in 0..<flips {
                    let position = Int.random(in: region, using: &generator)
                    damaged[position] ^= UInt8.random(in: 1...255, using: &generator)
                    pages.insert(pageOwners[position / pageSize + 1] ?? "free")
                }
                try damaged.write(to: URL(fileURLWithPath: path))
                chmod(path, 0o600)
                let what = "\(name) trial \(trial) (pages of \(pages.sorted()))"
                let inAnIndex = pages.contains { $0.hasPrefix("item_") || $0.hasPrefix("sqlite_autoindex_item") }
                Self.expectClearOrCorrect(environment, secrets, what)
                // Known: a flipped byte in an index can make a lookup find nothing (see
                // aLeafThatLosesACell…); no check reads would notice it without one that reads the
                // whole file (PRAGMA quick_check) or a format change. Finding another item is not
                // known: every returned row is checked against the query, so that fails outright.
                withKnownIssue("damage in an index hides items from lookups", isIntermittent: true) {
                    Self.expectEachLookupClearOrCorrect(environment, secrets, what)
                } matching: { issue in
                    inAnIndex && issue.comments.contains { $0.rawValue.contains("silently lost") }
                }
                for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
            }
        }
    }

    /// Which table or index each page (1-based) of the file at `path` belongs to.
    static func pageOwners(_ path: String) throws -> [Int: String] {
        var owners: [Int: String] = [:]
        for line in try sqlite(path, "SELECT pageno || ' ' || name FROM dbstat").split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2, let page = Int(parts[0]) { owners[page] = String(parts[1]) }
        }
        return owners
    }

    /// Damage that SQLite's own reads cannot see: a leaf page of the item table or of one of its
    /// indexes claiming one cell fewer than it holds (the two header bytes at 3..<5 of the page's
    /// b-tree header). Every page in turn; each is checked as any damage is.
    ///
    /// Known to lose items silently today: a table leaf's last item is missing from every read,
    /// an index leaf's last entry from lookups through that index. Nothing in the file says how
    /// many items there are, so only a check that reads the whole file (`PRAGMA quick_check`
    /// reports each of these pages) or a format change (a count or a MAC over the set of items)
    /// can tell. Marked as a known issue, matched on the words "silently lost" only, so that any
    /// other failure here (a wrong secret, an unclear error) still fails the test, and so that the
    /// day the engine catches this damage the marker must go.
    @Test func aLeafThatLosesACellIsAClearErrorOrTheRightSecrets() throws {
        let environment = try TestEnvironment()
        let (original, secrets) = try Self.makeKeychain(environment)
        let path = environment.path(of: "login")
        let pageSize = Int(try sqlite(path, "PRAGMA page_size"))!
        let leaves = try sqlite(path, "SELECT name || ' ' || pageno FROM dbstat WHERE pagetype = 'leaf'"
                                    + " AND (name = 'item' OR name LIKE 'item_%' OR name LIKE 'sqlite_autoindex_item%') ORDER BY pageno")
            .split(separator: "\n").map { $0.split(separator: " ") }
        #expect(!leaves.isEmpty)
        for leaf in leaves {
            let (name, page) = (String(leaf[0]), Int(leaf[1])!)
            let header = (page - 1) * pageSize + (page == 1 ? 100 : 0)
            let cells = Int(original[header + 3]) << 8 | Int(original[header + 4])
            guard cells > 0 else { continue }
            var damaged = original
            damaged[header + 3] = UInt8((cells - 1) >> 8)
            damaged[header + 4] = UInt8((cells - 1) & 0xff)
            try damaged.write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            let what = "\(name) leaf page \(page): \(cells) cells claimed as \(cells - 1)"
            withKnownIssue("a leaf that claims fewer cells hides items", isIntermittent: name != "item") {
                Self.expectClearOrCorrect(environment, secrets, what)
                Self.expectEachLookupClearOrCorrect(environment, secrets, what)
            } matching: { issue in
                issue.comments.contains { $0.rawValue.contains("silently lost") }
            }
            for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
        }
    }
}
