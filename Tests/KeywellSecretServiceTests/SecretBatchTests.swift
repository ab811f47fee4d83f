import Foundation
import KeywellProtocol
import KeywellSecretService
import KeywellTestSupport
import Testing

@testable import KeywellCore

/// `secretServiceSecretBatch` (what GetSecrets reads) gives what `secretServiceSecrets` gives,
/// for every kind of item, while reading only what opening a secret takes.
@Suite struct SecretBatchTests {
    let directory: TemporaryDirectory
    let store: KeychainStore

    init() throws {
        (directory, store) = try makeLoginKeychainStore(prefix: "kwss-batch")
    }

    private func ids(ofClass itemClass: String) throws -> [UUID] {
        try store.secretServiceSearch(["xdg:schema": itemClass == "genp" ? "org.keywell.generic-password" : "org.keywell.internet-password"],
                                      in: "login")
    }

    @Test func theSameSecretsForEveryKindOfItemAndBatchSize() throws {
        var made: [UUID] = []
        for index in 0..<150 {
            let type = index % 3 == 0 ? "application/json" : "text/plain"
            made.append(try store.secretServiceCreateItem(
                in: "login", label: "L\(index)", attributes: ["n": "\(index)"], type: nil,
                secret: SecretServiceSecret(value: Data("v\(index)".utf8), contentType: type), replace: false).id)
        }
        _ = try store.add(["class": .string("genp"), "svce": .string("svc"), "acct": .string("alice"), "v_Data": .data(Data("g".utf8))])
        _ = try store.add(["class": .string("inet"), "srvr": .string("example.com"), "acct": .string("bob"), "ptcl": .string("htps"),
                           "port": .integer(8443), "path": .string("/x"), "sdmn": .string("d"), "atyp": .string("dflt"),
                           "v_Data": .data(Data("i".utf8))])
        _ = try store.add(["class": .string("inet"), "srvr": .string("bare.example"), "v_Data": .data(Data("b".utf8))])
        let natives = try ids(ofClass: "genp") + ids(ofClass: "inet")
        #expect(natives.count == 3)
        let everything = made + natives + [UUID()]
        for batch in [[made[0]], Array(made.prefix(64)), Array(made.prefix(65)), everything] {
            let lean = try store.secretServiceSecretBatch(batch, in: "login")
            #expect(lean == (try store.secretServiceSecrets(batch, in: "login")))
        }
        let all = try store.secretServiceSecretBatch(everything, in: "login")
        #expect(all.count == 153, "the unknown id is left out")
        #expect(all[made[3]] == SecretServiceSecret(value: Data("v3".utf8), contentType: "application/json"))
        #expect(Set(natives.compactMap { all[$0]?.value }) == [Data("g".utf8), Data("i".utf8), Data("b".utf8)])
    }

    /// The batch binds each secret to the item's identity from the row's key columns as the
    /// item path does: a row renamed on disk, or given another port, does not open.
    @Test func aKeyColumnChangedOnDiskIsDecode() throws {
        _ = try store.add(["class": .string("genp"), "svce": .string("svc"), "acct": .string("alice"), "v_Data": .data(Data("g".utf8))])
        _ = try store.add(["class": .string("inet"), "srvr": .string("example.com"), "acct": .string("bob"), "port": .integer(8443),
                           "v_Data": .data(Data("i".utf8))])
        let ids = try ids(ofClass: "genp") + ids(ofClass: "inet")
        #expect(try store.secretServiceSecretBatch(ids, in: "login").count == 2)
        let file = directory.url.appendingPathComponent("keychains/login.keychain-db").path
        for change in ["UPDATE item SET acct = 'mallory', acct_n = 'mallory', acct_f = 'mallory' WHERE acct = 'alice'",
                       "UPDATE item SET port = 443 WHERE acct = 'bob'"] {
            let sqlite = try ChildProcess.run("/usr/bin/sqlite3", arguments: [file, change])
            #expect(sqlite.termination.succeeded, "\(sqlite)")
        }
        for id in ids {
            let failure = #expect(throws: KeychainError.self) { _ = try store.secretServiceSecretBatch([id], in: "login") }
            #expect(failure?.status == SecStatus.decode)
        }
    }

    @Test func lockedAndMissingKeychainsFail() throws {
        let id = try store.secretServiceCreateItem(in: "login", label: "L", attributes: ["a": "b"], type: nil,
                                                   secret: SecretServiceSecret(value: Data("v".utf8), contentType: "text/plain"),
                                                   replace: false).id
        try store.lock("login")
        let locked = #expect(throws: KeychainError.self) { _ = try store.secretServiceSecretBatch([id], in: "login") }
        #expect(locked?.status == SecStatus.interactionNotAllowed)
        let missing = #expect(throws: KeychainError.self) { _ = try store.secretServiceSecretBatch([id], in: "ghost") }
        #expect(missing?.status == SecStatus.noSuchKeychain)
    }
}
