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
            #expect(lost.isEmpty, "\(what): the read succeeded without \(lost)", sourceLocation: sourceLocation)
            for (account, value) in found {
                #expect(value == secrets[account], "\(what): wrong secret for \(account)", sourceLocation: sourceLocation)
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
        try sqlite(path, "CREATE TABLE keychain (id INTEGER, format_version, uuid, kdf_salt, kdf_ops_limit, kdf_mem_limit, wrap_nonce, wrapped_key, lock_on_sleep, lock_after_seconds); INSERT INTO keychain (id, format_version, uuid) VALUES (1, 'one', x'00');")
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
        for (name, region) in regions {
            for trial in 0..<25 {
                var damaged = original
                let flips = Int.random(in: 1...4, using: &generator)
                for _ in 0..<flips {
                    let position = Int.random(in: region, using: &generator)
                    damaged[position] ^= UInt8.random(in: 1...255, using: &generator)
                }
                try damaged.write(to: URL(fileURLWithPath: path))
                chmod(path, 0o600)
                Self.expectClearOrCorrect(environment, secrets, "\(name) trial \(trial)")
                for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
            }
        }
    }
}
