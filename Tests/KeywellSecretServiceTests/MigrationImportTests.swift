import Foundation
import KeywellProtocol
import KeywellSecretService
import KeywellTestSupport
import Testing

@testable import KeywellCore

/// `secretServiceImportItems`, which a migration imports one source file with (docs/migration.md,
/// "The state file and importing again"): one transaction, replacing what an earlier import made.
@Suite struct MigrationImportTests {
    let directory: TemporaryDirectory
    let store: KeychainStore

    init() throws {
        (directory, store) = try makeLoginKeychainStore(prefix: "kwss-import")
    }

    private func item(_ label: String, _ secret: String, replacing: UUID? = nil) -> FreeformImportItem {
        FreeformImportItem(label: label, attributes: ["server": "F", "user": label, "xdg:schema": "org.qt.keychain"], type: nil,
                           secret: SecretServiceSecret(value: Data(secret.utf8), contentType: "text/plain"),
                           times: SecretServiceItemTimes(created: Date(timeIntervalSince1970: 1_700_000_000),
                                                         modified: Date(timeIntervalSince1970: 1_700_000_100)),
                           replacing: replacing)
    }

    @Test func everyItemGoesInWithItsTimesAndReplacedItemsGo() throws {
        let first = try store.secretServiceImportItems([item("a", "1"), item("b", "2")], in: "login")
        #expect(first.count == 2)
        let made = try store.secretServiceItem(first[0], in: "login")
        #expect(made.label == "a" && made.attributes["user"] == "a")
        #expect(made.created == Date(timeIntervalSince1970: 1_700_000_000))
        let again = try store.secretServiceImportItems([item("a", "new", replacing: first[0]), item("c", "3")], in: "login")
        #expect(try !store.secretServiceContains(first[0], in: "login"))
        #expect(try store.secretServiceSecrets([again[0]], in: "login")[again[0]]?.value == Data("new".utf8))
        #expect(try store.secretServiceItemIDs(in: "login").count == 3)
    }

    @Test func aLockedKeychainTakesNothing() throws {
        try store.lock("login")
        #expect(throws: KeychainError.self) { try store.secretServiceImportItems([item("a", "1")], in: "login") }
    }
}
