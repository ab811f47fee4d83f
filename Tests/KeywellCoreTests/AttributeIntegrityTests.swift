import Foundation
import KeywellProtocol
import KeywellSecretService
import Testing

@testable import KeywellCore

/// Attributes and lock settings edited in the file with sqlite3 (as someone with write access to
/// the disk would) are detected once the keychain is unlocked; files of format 1 are upgraded.
@Suite struct AttributeIntegrityTests {
    private func ssItem(_ store: KeychainStore, _ label: String, _ attributes: [String: String], _ value: String) throws -> UUID {
        try store.secretServiceCreateItem(
            in: "login", label: label, attributes: attributes, type: nil,
            secret: SecretServiceSecret(value: Data(value.utf8), contentType: "text/plain"), replace: false
        ).id
    }

    private func expectTampered(_ body: () throws -> Void) {
        do {
            try body()
            Issue.record("expected errSecDecode")
        } catch let error as KeychainError {
            #expect(error.status == SecStatus.decode)
            #expect(error.wireMessage.contains("integrity"), "\(error.wireMessage)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func swappedSecretServiceAttributeRowsAreDetectedOnceUnlocked() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let bank = try ssItem(store, "Bank", ["server": "bank.example", "user": "carol"], "bank password")
        let evil = try ssItem(store, "Evil", ["server": "evil.example", "user": "carol"], "evil password")
        try sqlite(environment.path(of: "login"), """
            UPDATE item_attribute SET value = CASE value WHEN 'bank.example' THEN 'evil.example' ELSE 'bank.example' END
            WHERE name = 'server'
            """)

        // Locked: attributes are read unchecked, as on macOS (nothing can check them then).
        try store.lock("login")
        #expect(try store.secretServiceSearch(["server": "evil.example"], in: "login") == [bank])
        #expect(try store.secretServiceItem(bank, in: "login").attributes["server"] == "evil.example")

        try store.unlock("login", password: secret("pw"))
        expectTampered { _ = try store.secretServiceSearch(["server": "evil.example"], in: "login") }
        expectTampered { _ = try store.secretServiceSearch([:], in: "login") }
        expectTampered { _ = try store.secretServiceSecretBatch([bank], in: "login") }
        expectTampered { _ = try store.secretServiceSecretBatch([evil], in: "login") }
        expectTampered { _ = try store.secretServiceSecrets([bank], in: "login") }
        expectTampered { _ = try store.secretServiceItem(bank, in: "login") }
        // A change must not vouch for the edit.
        expectTampered { try store.secretServiceUpdateItem(bank, in: "login", label: "renamed", attributes: nil) }
        expectTampered {
            _ = try store.secretServiceCreateItem(
                in: "login", label: "Bank", attributes: ["server": "evil.example", "user": "carol"], type: nil,
                secret: SecretServiceSecret(value: Data("new".utf8), contentType: "text/plain"), replace: true)
        }
        expectTampered { try store.secretServiceSetSecret(SecretServiceSecret(value: Data("x".utf8), contentType: "text/plain"),
                                                          of: bank, in: "login") }
        // Swapped back, both items are whole again.
        try sqlite(environment.path(of: "login"), """
            UPDATE item_attribute SET value = CASE value WHEN 'bank.example' THEN 'evil.example' ELSE 'bank.example' END
            WHERE name = 'server'
            """)
        #expect(try store.secretServiceSecretBatch([bank], in: "login")[bank]?.value == Data("bank password".utf8))
        #expect(try store.secretServiceSearch(["server": "evil.example"], in: "login") == [evil])
    }

    @Test func aChangedLabelHiddenRowOrMissingMACIsDetected() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let path = environment.path(of: "login")
        let item = try ssItem(store, "Bank", ["server": "bank.example"], "pw1")
        let edits = [
            ("UPDATE item SET labl = 'Evil', labl_n = 'Evil', labl_f = 'evil'", "UPDATE item SET labl = 'Bank', labl_n = 'Bank', labl_f = 'bank'"),
            ("INSERT INTO item_attribute VALUES (1, char(0) || 'content-type', 'text/html')", "DELETE FROM item_attribute WHERE value = 'text/html'"),
            ("DELETE FROM item_attribute WHERE name = 'server'", "INSERT INTO item_attribute VALUES (1, 'server', 'bank.example')"),
            ("UPDATE item SET mac = NULL", nil),
        ]
        for (edit, undo) in edits {
            try sqlite(path, edit)
            expectTampered { _ = try store.secretServiceSecretBatch([item], in: "login") }
            expectTampered { _ = try store.secretServiceItem(item, in: "login") }
            if let undo {
                try sqlite(path, undo)
                #expect(try store.secretServiceItem(item, in: "login").label == "Bank")
            }
        }
    }

    @Test func editedNativeColumnsAreDetectedEvenInMatchColumnsAlone() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let path = environment.path(of: "login")
        _ = try store.add(inet("bob", "bank.example", [WireKey.valueData: data("bank secret"), "icmt": .string("note")]))
        _ = try store.add(inet("bob", "evil.example", [WireKey.valueData: data("evil secret")]))

        try sqlite(path, "UPDATE item SET icmt = 'edited' WHERE srvr = 'bank.example'")
        expectTampered { _ = try store.copyMatching(inet("bob", "bank.example") + returnAttributes) }
        expectTampered { try store.update(inet("bob", "bank.example"), ["icmt": .string("again")]) }
        try sqlite(path, "UPDATE item SET icmt = 'note' WHERE srvr = 'bank.example'")
        #expect(try store.copyMatching(inet("bob", "bank.example") + returnData) == [[WireKey.valueData: data("bank secret")]])

        // The columns searches compare with: the bank item made to match "evil" without its
        // visible value (or its sealed key) changing.
        try sqlite(path, "UPDATE item SET srvr_n = 'evil2.example', srvr_f = 'evil2.example' WHERE srvr = 'bank.example'")
        expectTampered { _ = try store.copyMatching(inet("bob", "evil2.example") + returnData) }
        expectTampered { _ = try store.copyMatching(inet("bob", "evil2.example") + returnAttributes) }
        expectTampered { _ = try store.copyMatching(inet("bob", "evil2.example") + [WireKey.returnPersistentRef: .bool(true)]) }
        // The other item still reads, and deleting the tampered one is allowed (that is the remedy).
        #expect(try store.copyMatching(inet("bob", "evil.example") + returnData) == [[WireKey.valueData: data("evil secret")]])
        try store.delete(inet("bob", "evil2.example"))
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(inet("bob", "bank.example")) }
    }

    @Test func writesKeepTheirMACsValid() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let item = try ssItem(store, "One", ["app": "x"], "s1")
        try store.secretServiceUpdateItem(item, in: "login", label: "Two", attributes: ["app": "y", "user": "u"])
        try store.secretServiceSetSecret(SecretServiceSecret(value: Data("{}".utf8), contentType: "application/json"), of: item, in: "login")
        _ = try store.secretServiceCreateItem(
            in: "login", label: "Three", attributes: ["app": "y", "user": "u"], type: "org.example.T",
            secret: SecretServiceSecret(value: Data("s3".utf8), contentType: "text/plain"), replace: true)
        _ = try store.add(genp("a", "s", [WireKey.valueData: data("v")]))
        try store.addBatch((0..<3).map { genp("b\($0)", "s") })
        try store.update(genp("a", "s"), ["acct": .string("a2"), "labl": .string("L")])
        try store.update([WireKey.class: .string("genp"), "agrp": .string(FreeformItem.accessGroup(for: item))], ["icmt": .string("c")])

        #expect(try store.secretServiceItem(item, in: "login").label == "Three")
        #expect(try store.secretServiceSecretBatch([item], in: "login")[item]?.value == Data("s3".utf8))
        #expect(try store.copyMatching([WireKey.class: .string("genp")] + limitAll + returnAttributes).count == 5)
        // Every row's MAC is the one a fresh computation gives (none left stale).
        #expect(try sqlite(environment.path(of: "login"), "SELECT count(*) FROM item WHERE mac IS NULL OR length(mac) != 32") == "0")
    }

    @Test func editedLockSettingsRefuseTheUnlock() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        let path = environment.path(of: "work")
        try store.setSettings("work", [KeychainInfoKey.lockAfterSeconds: .integer(60)])
        try store.lock("work")
        // Changing the settings needs the keychain unlocked (their MAC needs its key), as on macOS.
        expectStatus(SecStatus.interactionNotAllowed) { try store.setSettings("work", [KeychainInfoKey.lockOnSleep: .bool(false)]) }

        for edit in ["lock_after_seconds = 0", "lock_on_sleep = 0", "lock_on_screen_lock = 0", "settings_mac = NULL"] {
            let original = try sqlite(
                path, "SELECT lock_after_seconds || ',' || lock_on_sleep || ',' || hex(settings_mac) || ',' || lock_on_screen_lock FROM keychain")
            try sqlite(path, "UPDATE keychain SET \(edit)")
            do {
                try store.unlock("work", password: secret("pw"))
                Issue.record("unlocked with \(edit)")
            } catch {
                #expect(error.status == SecStatus.decode)
                #expect(error.wireMessage.contains("lock settings"), "\(error.wireMessage)")
            }
            #expect(try store.isLocked("work"))
            expectStatus(SecStatus.decode) { try store.changePassword("work", old: secret("pw"), new: secret("pw2")) }
            let parts = original.split(separator: ",")
            try sqlite(path, "UPDATE keychain SET lock_after_seconds = \(parts[0]), lock_on_sleep = \(parts[1]), settings_mac = X'\(parts[2])', "
                       + "lock_on_screen_lock = \(parts[3])")
        }
        try store.unlock("work", password: secret("pw"))
        #expect(try store.info("work")[KeychainInfoKey.lockAfterSeconds] == .integer(60))
        // Edited while unlocked: GetInfo refuses to show it, and the next change does not bless it.
        try sqlite(path, "UPDATE keychain SET lock_after_seconds = 0")
        expectStatus(SecStatus.decode) { _ = try store.info("work") }
        expectStatus(SecStatus.decode) { try store.setSettings("work", [KeychainInfoKey.lockOnSleep: .bool(false)]) }
    }

    @Test func aFileCannotBePassedOffAsFormat1() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        try store.lock("work")
        try sqlite(environment.path(of: "work"), "UPDATE keychain SET format_version = 1")
        // The version is in the wrapped key's associated data.
        expectStatus(SecStatus.authFailed) { try store.unlock("work", password: secret("pw")) }
    }

    // MARK: Files of format 1

    /// The fixture: a login keychain written by Keywell before MACs existed (password
    /// "fixture password"): native genp alice/mail, native inet bob/bank.example, and Secret
    /// Service items Bank (server bank.example) and Evil (server evil.example, a content type and a type).
    private func installFixture(_ environment: TestEnvironment) throws -> String {
        try environment.installLogin(fixture: "format1.keychain-db")
    }

    @Test func aFormat1FileReadsLockedAndIsUpgradedAtItsFirstUnlock() throws {
        let environment = try TestEnvironment()
        let path = try installFixture(environment)
        #expect(try sqlite(path, "SELECT format_version FROM keychain") == "1")
        let store = try environment.makeStore()

        // Locked, it reads as before.
        #expect(try store.isLocked("login"))
        let bank = try #require(store.secretServiceSearch(["server": "bank.example", "user": "carol"], in: "login").first)
        #expect(try store.secretServiceItem(bank, in: "login").label == "Bank")
        #expect(try store.copyMatching(genp("alice", "mail") + returnAttributes)[0]["labl"] == .string("Mail"))

        try store.unlock("login", password: secret("fixture password"))
        #expect(try sqlite(path, "SELECT format_version FROM keychain") == "3")
        #expect(try sqlite(path, "SELECT count(*) FROM item WHERE length(mac) = 32") == "4")
        #expect(try sqlite(path, "SELECT length(settings_mac) FROM keychain") == "32")

        #expect(try store.copyMatching(genp("alice", "mail") + returnData) == [[WireKey.valueData: data("native mail secret")]])
        #expect(try store.copyMatching(inet("bob", "bank.example") + returnData) == [[WireKey.valueData: data("native bank secret")]])
        let evil = try #require(store.secretServiceSearch(["server": "evil.example"], in: "login").first)
        let secrets = try store.secretServiceSecretBatch([bank, evil], in: "login")
        #expect(secrets[bank] == SecretServiceSecret(value: Data("bank password".utf8), contentType: "text/plain"))
        #expect(secrets[evil] == SecretServiceSecret(value: Data("evil password".utf8), contentType: "application/json"))
        #expect(try store.secretServiceItem(evil, in: "login").type == "org.example.Custom")

        // Upgraded, it is guarded like any other.
        try sqlite(path, "UPDATE item_attribute SET value = 'evil.example' WHERE value = 'bank.example'")
        expectTampered { _ = try store.secretServiceSearch(["server": "evil.example"], in: "login") }
        try store.lock("login")
        try store.unlock("login", password: secret("fixture password"))
        expectTampered { _ = try store.secretServiceSecretBatch([bank], in: "login") }
    }

    @Test func aPasswordChangeUpgradesAFormat1FileToo() throws {
        let environment = try TestEnvironment()
        let path = try installFixture(environment)
        let store = try environment.makeStore()
        try store.changePassword("login", old: secret("fixture password"), new: secret("new"))
        #expect(try store.isLocked("login"))
        #expect(try sqlite(path, "SELECT format_version || ',' || length(settings_mac) FROM keychain") == "3,32")
        try store.unlock("login", password: secret("new"))
        #expect(try store.copyMatching(genp("alice", "mail") + returnData) == [[WireKey.valueData: data("native mail secret")]])
    }
}
