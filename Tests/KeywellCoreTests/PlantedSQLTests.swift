import Foundation
import GRDB
import KeywellProtocol
import KeywellSecretService
import Testing

@testable import KeywellCore

/// SQL planted in a keychain file (a trigger, a view, a table or index of someone else's, a table
/// defined otherwise) would run inside the process that opens it: every open, every write after
/// the schema changed, and every restore refuse such a file with a clear error naming the file
/// and the object, and nothing is lost (docs/file-format.md, "What a keychain file may hold").
@Suite struct PlantedSQLTests {
    /// (what is planted, the SQL that plants it, the object the refusal must name)
    static let plantings: [(String, String, String)] = [
        ("a trigger that hides deletes", "CREATE TRIGGER t_hide BEFORE DELETE ON item BEGIN SELECT RAISE(IGNORE); END",
         "trigger \"t_hide\""),
        ("a view", "CREATE VIEW v_secrets AS SELECT secret FROM item", "view \"v_secrets\""),
        ("an extra table", "CREATE TABLE stash (x BLOB)", "table \"stash\""),
        ("an extra index", "CREATE INDEX item_extra ON item (acct)", "index \"item_extra\""),
        ("a changed table", "ALTER TABLE item ADD COLUMN extra TEXT", "table \"item\""),
        ("a changed index", "DROP INDEX item_label; CREATE INDEX item_label ON item (labl_n, secret)", "index \"item_label\""),
        ("a missing index", "DROP INDEX item_label", "index \"item_label\""),
    ]

    /// A login keychain holding one item, with its store gone.
    private func keychainWithOneItem(_ environment: TestEnvironment) throws -> String {
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("alice", "mail") + [WireKey.valueData: data("kept")])
        try store.lock("login")
        return environment.path(of: "login")
    }

    private func expectRefusal(
        _ path: String, naming object: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws -> Void
    ) {
        let error = expectStatus(SecStatus.invalidKeychain, "\(what)", sourceLocation: sourceLocation, body)
        let detail = error?.detail ?? ""
        #expect(detail.contains(object) && detail.contains(path), "\(what): \(detail)", sourceLocation: sourceLocation)
    }

    @Test(arguments: plantings)
    func aKeychainFileWithPlantedSQLIsRefusedAtOpen(_ what: String, _ plant: String, _ object: String) throws {
        let environment = try TestEnvironment()
        let path = try keychainWithOneItem(environment)
        try sqlite(path, plant)
        let store = try environment.makeStore()
        expectRefusal(path, naming: object, what) { try store.unlock("login", password: secret("pw")) }
        expectRefusal(path, naming: object, what) { _ = try store.info("login") }
        #expect(try sqlite(path, "SELECT count(*) FROM item") == "1", "\(what)")
    }

    @Test func aTriggerPlantedWhileTheKeychainIsOpenStopsTheNextWrite() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("alice", "mail") + [WireKey.valueData: data("kept")])
        let path = environment.path(of: "login")
        try sqlite(path, "CREATE TRIGGER t_hide BEFORE DELETE ON item BEGIN SELECT RAISE(IGNORE); END")
        expectRefusal(path, naming: "trigger \"t_hide\"", "delete") { try store.delete(genp("alice", "mail")) }
        #expect(try sqlite(path, "SELECT count(*) FROM item") == "1")
        // Once the trigger is gone the keychain works again, and the delete is real.
        try sqlite(path, "DROP TRIGGER t_hide")
        try store.delete(genp("alice", "mail"))
        #expect(try sqlite(path, "SELECT count(*) FROM item") == "0")
    }

    @Test func aBackupWithPlantedSQLIsNotRestored() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("alice", "mail") + [WireKey.valueData: data("kept")])
        let backup = environment.root.path + "/backup.keychain-db"
        try store.backupKeychain("login", to: backup, replacing: false)
        try sqlite(backup, "CREATE TRIGGER t_slow BEFORE INSERT ON item BEGIN SELECT 1; END")
        expectRefusal(backup, naming: "trigger \"t_slow\"", "restore") {
            _ = try store.restoreKeychain(from: backup, as: "restored", replacing: false)
        }
        #expect(!FileManager.default.fileExists(atPath: environment.path(of: "restored")))
        // Nor is a live keychain with planted SQL backed up.
        try sqlite(environment.path(of: "login"), "CREATE VIEW v_secrets AS SELECT secret FROM item")
        expectRefusal(environment.path(of: "login"), naming: "view \"v_secrets\"", "backup") {
            try store.backupKeychain("login", to: environment.root.path + "/second.keychain-db", replacing: false)
        }
    }

    @Test func anUntouchedBackupRestoresAndALabelledKeychainOpens() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("alice", "mail") + [WireKey.valueData: data("kept")])
        try store.setKeychainLabel("login", "Login")
        let backup = environment.root.path + "/backup.keychain-db"
        try store.backupKeychain("login", to: backup, replacing: false)
        _ = try store.restoreKeychain(from: backup, as: "restored", replacing: false)
        let reopened = try environment.makeStore()
        try reopened.unlock("restored", password: secret("pw"))
        #expect(try reopened.keychainLabel("restored") == "Login")
        #expect(try reopened.copyMatching(genp("alice", "mail") + returnData + [WireKey.matchSearchList: .strings(["restored"])])
            == [[WireKey.valueData: data("kept")]])
    }

    /// Files of formats 1 and 2, as older Keywells wrote them, open locked, upgrade at their
    /// first unlock, and open again once upgraded.
    @Test(arguments: ["format1", "format2"])
    func olderFormatsOpenBeforeAndAfterTheirUpgrade(_ fixture: String) throws {
        let environment = try TestEnvironment()
        try FileManager.default.createDirectory(atPath: environment.keychainsDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let path = environment.path(of: "login")
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Fixtures/\(fixture).keychain-db").standardized.path
        try FileManager.default.copyItem(atPath: source, toPath: path)
        chmod(path, 0o600)
        let store = try environment.makeStore()
        _ = try store.info("login")
        try store.unlock("login", password: secret("fixture password"))
        try store.setSettings("login", [KeychainInfoKey.lockOnScreenLock: .bool(true)])
        #expect(try sqlite(path, "SELECT format_version FROM keychain") == "3")
        let reopened = try environment.makeStore()
        try reopened.unlock("login", password: secret("fixture password"))
        #expect(try reopened.copyMatching(genp("alice", "mail") + returnData) == [[WireKey.valueData: data("native mail secret")]])
    }

    /// What a trigger would do if one ran anyway: a delete or an update it swallowed fails and
    /// rolls back instead of being reported done. A temporary trigger on the writing connection
    /// stands in for a planted one, which the schema check stops first.
    @Test func aChangeThatDidNotHappenFailsInsteadOfBeingReportedDone() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        _ = try store.add(genp("alice", "mail") + [WireKey.valueData: data("kept")])
        let database = try store.file(at: store.location("login")).database
        try database.write { db in
            try db.execute(sql: "CREATE TEMP TRIGGER t_hide BEFORE DELETE ON main.item BEGIN SELECT RAISE(IGNORE); END")
            try db.execute(sql: "CREATE TEMP TRIGGER t_freeze BEFORE UPDATE ON main.item BEGIN SELECT RAISE(IGNORE); END")
        }
        let deleting = expectStatus(SecStatus.decode) { try store.delete(genp("alice", "mail")) }
        #expect(deleting?.detail?.contains("changed 0 rows instead of 1") == true, "\(String(describing: deleting))")
        expectStatus(SecStatus.decode) { try store.update(genp("alice", "mail"), [WireKey.valueData: data("new")]) }
        #expect(try store.copyMatching(genp("alice", "mail") + returnData) == [[WireKey.valueData: data("kept")]])
    }

    /// A new item's attribute row that a trigger swallowed fails the whole create, and nothing
    /// of the item is stored (its row is built before the transaction, its rows inside it).
    @Test func anAttributeRowThatWasNotInsertedFailsTheCreate() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let database = try store.file(at: store.location("login")).database
        try database.write { db in
            try db.execute(sql: """
                CREATE TEMP TRIGGER t_drop BEFORE INSERT ON main.item_attribute WHEN NEW.name = 'a13'
                BEGIN SELECT RAISE(IGNORE); END
                """)
        }
        let attributes = Dictionary(uniqueKeysWithValues: (0..<20).map { ("a\($0)", "v\($0)") })
        let creating = expectStatus(SecStatus.decode) {
            _ = try store.secretServiceCreateItem(
                in: "login", label: "many", attributes: attributes, type: nil,
                secret: SecretServiceSecret(value: Data("pw".utf8), contentType: "text/plain"), replace: false)
        }
        #expect(creating?.detail?.contains("instead of") == true, "\(String(describing: creating))")
        #expect(try sqlite(environment.path(of: "login"), "SELECT count(*) FROM item") == "0")
        #expect(try sqlite(environment.path(of: "login"), "SELECT count(*) FROM item_attribute") == "0")
    }

    /// SQL that runs longer than a call may is stopped with a clear error, and the connection
    /// works again afterwards.
    @Test func sqlPastItsTimeLimitIsStopped() throws {
        let environment = try TestEnvironment()
        _ = try keychainWithOneItem(environment)
        let database = try KeychainDatabase(opening: environment.path(of: "login"), timeLimit: .milliseconds(200))
        let endless = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"
        let started = ContinuousClock.now
        for body in [{ try database.read { db in _ = try Int.fetchOne(db, sql: endless) } },
                     { try database.write { db in _ = try Int.fetchOne(db, sql: endless) } }] {
            let error = expectStatus(SecStatus.io) { try body() }
            #expect(error?.detail?.contains("time limit") == true, "\(String(describing: error))")
        }
        #expect(ContinuousClock.now - started < .seconds(20))
        #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item") } == 1)
    }

    @Test func everyConnectionDistrustsTheSchemaAndIsDefensive() throws {
        let environment = try TestEnvironment()
        _ = try keychainWithOneItem(environment)
        let database = try KeychainDatabase(opening: environment.path(of: "login"))
        #expect(try database.read { db in try Int.fetchOne(db, sql: "PRAGMA trusted_schema") } == 0)
        // Defensive: writable_schema has no effect, so sqlite_master cannot be edited.
        #expect(throws: KeychainError.self) {
            try database.write { db in
                try db.execute(sql: "PRAGMA writable_schema = ON")
                try db.execute(sql: "UPDATE sqlite_master SET sql = sql WHERE name = 'item'")
            }
        }
    }

    @Test func theAcceptedSchemasIncludeWhatTheCodeCreates() throws {
        let schemas = try KeychainSchemaCheck.acceptedSchemas.get()
        let made = try DatabaseQueue().inDatabase { db in
            for statement in KeychainSchema.statements { try db.execute(sql: statement) }
            return Set(try KeychainSchemaCheck.objects(db))
        }
        #expect(schemas.contains(made))
        #expect(KeychainSchemaCheck.normalized("CREATE TABLE t (\n  a INT,\n  b 'x  y'\n, c)") == "CREATE TABLE t(a INT,b 'x  y',c)")
    }
}
