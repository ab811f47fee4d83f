import Foundation
import KeywellProtocol
import KeywellSecretService
import Testing

@testable import KeywellCore

/// Access lists stored with items (docs/access-control.md, "Access lists on items"): what Add,
/// CopyMatching and Update do with them, their caps, the MAC that binds them, `enforceAccess`.
@Suite struct AccessListTests {
    private let foo = "exe:/usr/bin/foo;sha256=" + String(repeating: "ab", count: 32)
    private let app = "flatpak:org.example.App"
    private let returnAccess: WireDictionary = [WireKey.returnAccess: .bool(true)]

    private func access(_ store: KeychainStore, _ query: WireDictionary) throws -> WireValue? {
        try store.copyMatching(query + returnAccess)[0][WireKey.access]
    }

    @Test func listsRoundTripThroughAddCopyMatchingAndUpdate() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("a", "s") + [WireKey.access: .strings([foo, app]), WireKey.valueData: data("x")])
        _ = try store.add(genp("b", "s") + [WireKey.access: .strings([]), WireKey.valueData: data("x")])
        _ = try store.add(genp("c", "s") + [WireKey.access: .string(WireKey.accessAnyApplication), WireKey.valueData: data("x")])
        #expect(try access(store, genp("a", "s")) == .strings([foo, app]))
        #expect(try access(store, genp("b", "s")) == .strings([]))
        #expect(try access(store, genp("c", "s")) == .string(WireKey.accessAnyApplication))
        // Only when asked.
        #expect(try store.copyMatching(genp("a", "s") + returnAttributes)[0][WireKey.access] == nil)
        // Lists are split on the newline byte: identities beyond ASCII, even one that starts with
        // a combining mark, come back as given (checked here, and while locked below).
        let unusual = ["exe:/opt/Ärger/app;sha256=" + String(repeating: "cd", count: 32), "\u{301}snap:odd.app"]
        _ = try store.add(genp("u", "s") + [WireKey.access: .strings(unusual), WireKey.valueData: data("x")])
        #expect(try access(store, genp("u", "s")) == .strings(unusual))

        try store.update(genp("a", "s"), [WireKey.access: .strings([app])])
        #expect(try access(store, genp("a", "s")) == .strings([app]))
        try store.update(genp("b", "s"), [WireKey.access: .string(WireKey.accessAnyApplication)])
        #expect(try access(store, genp("b", "s")) == .string(WireKey.accessAnyApplication))
        // Add can return it at once, and the list survives a lock and unlock.
        let added = try store.add(genp("d", "s") + [WireKey.access: .strings([app]), WireKey.valueData: data("x")] + returnAccess)
        #expect(added == [WireKey.access: .strings([app])])
        try store.lock("login")
        #expect(try access(store, genp("a", "s")) == .strings([app]))
        #expect(try access(store, genp("u", "s")) == .strings(unusual))
        try store.unlock("login", password: secret("pw"))
        #expect(try access(store, genp("a", "s")) == .strings([app]))
        #expect(try sqlite(environment.path(of: "login"), "SELECT quote(access) FROM item WHERE acct = 'b'") == "NULL")
    }

    @Test func aNewItemWithoutAListTrustsItsCreatorOnlyWhereAccessIsEnforced() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        #expect(try store.info("login")[KeychainInfoKey.enforceAccess] == .bool(true))
        // keywelld does not name its callers yet: no creator, any application.
        _ = try store.add(genp("none", "s") + [WireKey.valueData: data("x")])
        #expect(try access(store, genp("none", "s")) == .string(WireKey.accessAnyApplication))
        _ = try store.add(genp("creator", "s") + [WireKey.valueData: data("x")], creator: foo)
        #expect(try access(store, genp("creator", "s")) == .strings([foo]))
        // An explicit list wins over the creator.
        _ = try store.add(genp("explicit", "s") + [WireKey.access: .strings([app]), WireKey.valueData: data("x")], creator: foo)
        #expect(try access(store, genp("explicit", "s")) == .strings([app]))

        try store.setSettings("login", [KeychainInfoKey.enforceAccess: .bool(false)])
        #expect(try store.info("login")[KeychainInfoKey.enforceAccess] == .bool(false))
        #expect(try store.info("login")[KeychainInfoKey.lockOnSleep] == .bool(false))
        _ = try store.add(genp("off", "s") + [WireKey.valueData: data("x")], creator: foo)
        #expect(try access(store, genp("off", "s")) == .string(WireKey.accessAnyApplication))
        let made = try store.secretServiceCreateItem(
            in: "login", label: "L", attributes: ["k": "v"], type: nil,
            secret: SecretServiceSecret(value: Data("x".utf8), contentType: "text/plain"), replace: false, creator: foo)
        #expect(made.replaced == false)
        #expect(try sqlite(environment.path(of: "login"), "SELECT quote(access) FROM item WHERE labl = 'L'") == "NULL")
        try store.setSettings("login", [KeychainInfoKey.enforceAccess: .bool(true)])
        _ = try store.secretServiceCreateItem(
            in: "login", label: "M", attributes: ["k": "w"], type: nil,
            secret: SecretServiceSecret(value: Data("x".utf8), contentType: "text/plain"), replace: false, creator: foo)
        #expect(try sqlite(environment.path(of: "login"), "SELECT access FROM item WHERE labl = 'M'") == foo)
        expectStatus(SecStatus.param) { try store.setSettings("login", [KeychainInfoKey.enforceAccess: .string("on")]) }
    }

    @Test func listsAreCappedAndCheckedBeforeAnythingIsStored() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let longest = "exe:/" + String(repeating: "p", count: AccessList.maxIdentityBytes - 5)
        let full = (0..<AccessList.maxApplications).map { "snap:snap.app\($0).app" }
        _ = try store.add(genp("full", "s") + [WireKey.access: .strings(full), WireKey.valueData: data("x")])
        #expect(try access(store, genp("full", "s")) == .strings(full))
        _ = try store.add(genp("long", "s") + [WireKey.access: .strings([longest]), WireKey.valueData: data("x")])
        #expect(try access(store, genp("long", "s")) == .strings([longest]))
        // Duplicates count once, the first keeps its place.
        _ = try store.add(genp("dup", "s") + [WireKey.access: .strings([app, foo, app]), WireKey.valueData: data("x")])
        #expect(try access(store, genp("dup", "s")) == .strings([app, foo]))

        for bad: WireValue in [
            .strings(full + ["snap:one.more"]), .strings([longest + "p"]), .strings([""]), .strings(["exe:/a\nexe:/b"]),
            .strings(["exe:/a\u{7f}"]), .string("all"), .bool(true), .data(Data()),
        ] {
            expectStatus(SecStatus.param, "\(bad)") {
                _ = try store.add(genp("bad", "s") + [WireKey.access: bad, WireKey.valueData: data("x")])
            }
            expectStatus(SecStatus.param, "\(bad)") { try store.update(genp("full", "s"), [WireKey.access: bad]) }
        }
        expectStatus(SecStatus.itemNotFound) { _ = try store.copyMatching(genp("bad", "s")) }
        #expect(try access(store, genp("full", "s")) == .strings(full))
    }

    // MARK: The MAC covers the list

    private func expectTampered(_ body: () throws -> Void) {
        let error = expectStatus(SecStatus.decode) { try body() }
        #expect(error?.wireMessage.contains("integrity") == true, "\(String(describing: error))")
    }

    @Test func aListEditedOnDiskIsDetected() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let path = environment.path(of: "login")
        _ = try store.add(genp("listed", "s") + [WireKey.access: .strings([app]), WireKey.valueData: data("x")])
        _ = try store.add(genp("none", "s") + [WireKey.access: .strings([]), WireKey.valueData: data("x")])
        _ = try store.add(genp("any", "s") + [WireKey.access: .string(WireKey.accessAnyApplication), WireKey.valueData: data("x")])

        // Another identity added; a list made "any"; "any" narrowed to none (each a MAC failure).
        try sqlite(path, "UPDATE item SET access = access || char(10) || 'exe:/tmp/evil;sha256=00' WHERE acct = 'listed'")
        expectTampered { _ = try store.copyMatching(genp("listed", "s") + returnData) }
        // An attributes-only search does not split the lists, but its MAC check still covers them.
        expectTampered { _ = try store.copyMatching(genp("listed", "s") + returnAttributes) }
        expectTampered { try store.update(genp("listed", "s"), [WireKey.access: .strings([app])]) }
        try sqlite(path, "UPDATE item SET access = NULL WHERE acct = 'none'")
        expectTampered { _ = try store.copyMatching(genp("none", "s") + returnAttributes) }
        try sqlite(path, "UPDATE item SET access = '' WHERE acct = 'any'")
        expectTampered { _ = try store.copyMatching(genp("any", "s") + returnAccess) }
        // Put back, each reads again; the same text as a blob is another value.
        try sqlite(path, "UPDATE item SET access = NULL WHERE acct = 'any'")
        try sqlite(path, "UPDATE item SET access = '' WHERE acct = 'none'")
        try sqlite(path, "UPDATE item SET access = '\(app)' WHERE acct = 'listed'")
        #expect(try store.copyMatching([WireKey.class: .string(WireKey.classGenericPassword)] + limitAll + returnAccess).count == 3)
        try sqlite(path, "UPDATE item SET access = CAST('\(app)' AS BLOB) WHERE acct = 'listed'")
        expectTampered { _ = try store.copyMatching(genp("listed", "s") + returnData) }
    }

    /// Format 3's header MAC covers `enforce_access` and `lock_on_screen_lock` always, on or off.
    @Test func keywellSettingsAreCoveredByTheFormat3HeaderMAC() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work", "quiet"])
        // "quiet" has both off: turning either on in the file is refused too.
        try store.setSettings("quiet", [KeychainInfoKey.enforceAccess: .bool(false), KeychainInfoKey.lockOnScreenLock: .bool(false)])
        let edits = [("work", "enforce_access = 0"), ("work", "lock_on_screen_lock = 0"),
                     ("quiet", "enforce_access = 1"), ("quiet", "lock_on_screen_lock = 1")]
        for (keychain, edit) in edits {
            let path = environment.path(of: keychain)
            try store.lock(keychain)
            #expect(try sqlite(path, "SELECT format_version FROM keychain") == "3")
            let original = try sqlite(path, "SELECT enforce_access || ',' || lock_on_screen_lock FROM keychain").split(separator: ",")
            try sqlite(path, "UPDATE keychain SET \(edit)")
            expectStatus(SecStatus.decode) { try store.unlock(keychain, password: secret("pw")) }
            #expect(try store.isLocked(keychain), "\(keychain): \(edit)")
            try sqlite(path, "UPDATE keychain SET enforce_access = \(original[0]), lock_on_screen_lock = \(original[1])")
            try store.unlock(keychain, password: secret("pw"))
        }
    }

    // MARK: Files of format 2

    /// The fixture: a login keychain written by Keywell before access lists (password "fixture
    /// password"): native genp alice/mail, native inet bob/bank.example, Secret Service item Bank.
    private func installFixture(_ environment: TestEnvironment) throws -> String {
        try environment.installLogin(fixture: "format2.keychain-db")
    }

    @Test func aFormat2FileIsUpgradedAtItsFirstUnlockWithEveryItemOpenToAnyApplication() throws {
        let environment = try TestEnvironment()
        let path = try installFixture(environment)
        #expect(try sqlite(path, "SELECT format_version FROM keychain") == "2")
        let store = try environment.makeStore()

        // Locked, it reads as before, every item open to any application, enforcement off.
        #expect(try store.info("login")[KeychainInfoKey.enforceAccess] == .bool(false))
        #expect(try access(store, genp("alice", "mail")) == .string(WireKey.accessAnyApplication))

        try store.unlock("login", password: secret("fixture password"))
        #expect(try sqlite(path, "SELECT format_version || ',' || enforce_access FROM keychain") == "3,0")
        #expect(try sqlite(path, "SELECT count(*) FROM item WHERE access IS NULL") == "3")
        #expect(try store.info("login")[KeychainInfoKey.enforceAccess] == .bool(false))
        // The MACs written by the old code still hold.
        #expect(try store.copyMatching(genp("alice", "mail") + returnData) == [[WireKey.valueData: data("native mail secret")]])
        #expect(try store.copyMatching(inet("bob", "bank.example") + returnData + returnAccess)
            == [[WireKey.valueData: data("native bank secret"), WireKey.access: .string(WireKey.accessAnyApplication)]])
        let bank = try #require(store.secretServiceSearch(["server": "bank.example", "user": "carol"], in: "login").first)
        #expect(try store.secretServiceSecretBatch([bank], in: "login")[bank]
            == SecretServiceSecret(value: Data("bank password".utf8), contentType: "text/plain"))
        // Not enforcing: a creator is not trusted alone.
        _ = try store.add(genp("new", "s") + [WireKey.valueData: data("x")], creator: foo)
        #expect(try access(store, genp("new", "s")) == .string(WireKey.accessAnyApplication))

        // Upgraded, lists are bound like anywhere else.
        try store.update(genp("alice", "mail"), [WireKey.access: .strings([app])])
        try sqlite(path, "UPDATE item SET access = NULL WHERE acct = 'alice'")
        expectTampered { _ = try store.copyMatching(genp("alice", "mail") + returnData) }
        try store.lock("login")
        try store.unlock("login", password: secret("fixture password"))
        expectTampered { _ = try store.copyMatching(genp("alice", "mail") + returnData) }
    }

    @Test func aFormat2HeaderEditedOnDiskIsNotBlessedByTheUpgrade() throws {
        // The fixture predates lock on screen lock: no column, so off. Format 2's MAC covers that
        // setting only when on, so turning it on in the file must be refused like any other edit:
        // by the header's MAC, or (a column Keywell never defines so) by the schema check.
        let edits = [("UPDATE keychain SET lock_after_seconds = 1", SecStatus.decode),
                     ("ALTER TABLE keychain ADD COLUMN lock_on_screen_lock INTEGER NOT NULL DEFAULT 1", SecStatus.invalidKeychain)]
        for (edit, status) in edits {
            let environment = try TestEnvironment()
            let path = try installFixture(environment)
            try sqlite(path, edit)
            let store = try environment.makeStore()
            expectStatus(status, "\(edit)") { try store.unlock("login", password: secret("fixture password")) }
            #expect(try sqlite(path, "SELECT format_version FROM keychain") == "2", "\(edit)")
        }
    }

    @Test func aFormat2FileKeepsItsScreenLockSettingThroughTheUpgrade() throws {
        let environment = try TestEnvironment()
        let path = try installFixture(environment)
        // The column added by hand with the setting off, as the first settings change of a
        // format 2 file did: the format 2 MAC still verifies.
        try sqlite(path, "ALTER TABLE keychain ADD COLUMN lock_on_screen_lock INTEGER NOT NULL DEFAULT 0")
        let store = try environment.makeStore()
        try store.unlock("login", password: secret("fixture password"))
        #expect(try sqlite(path, "SELECT format_version || ',' || enforce_access || ',' || lock_on_screen_lock FROM keychain") == "3,0,0")
        try store.setSettings("login", [KeychainInfoKey.lockOnScreenLock: .bool(true)])
        try store.lock("login")
        try environment.makeStore().unlock("login", password: secret("fixture password"))
        #expect(try environment.makeStore().info("login")[KeychainInfoKey.lockOnScreenLock] == .bool(true))
    }

    @Test func aFileCannotBePassedOffAsFormat2() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        try store.lock("work")
        try sqlite(environment.path(of: "work"), "UPDATE keychain SET format_version = 2")
        expectStatus(SecStatus.authFailed) { try store.unlock("work", password: secret("pw")) }
    }
}
