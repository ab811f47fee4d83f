import Foundation
import GRDB
import KeywellProtocol
import Testing

@testable import KeywellCore

/// A write is one transaction in each keychain it touches: all of it lands, or none of it.
@Suite struct WriteTransactionTests {
    private struct Refused: Error {}

    private func scratchDatabases(_ store: KeychainStore, _ names: [String]) throws -> [KeychainDatabase] {
        let databases = try names.map { try store.file(at: store.location($0)).database }
        for database in databases {
            // The label's table: a table of their own would be refused as not a keychain's.
            try database.write { db in try db.execute(sql: KeychainSchema.labelTable) }
        }
        return databases
    }

    private func values(_ database: KeychainDatabase) throws -> [String] {
        try database.read { db in try String.fetchAll(db, sql: "SELECT name FROM keychain_metadata ORDER BY rowid") }
    }

    @Test func aWriteThatThrowsLeavesNothingAndTheNextOneLands() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["one"])
        let database = try scratchDatabases(store, ["one"])[0]
        #expect(throws: (any Error).self) {
            try database.write { db in
                try db.execute(sql: "INSERT INTO keychain_metadata VALUES ('lost', '')")
                throw Refused()
            }
        }
        try database.write { db in try db.execute(sql: "INSERT INTO keychain_metadata VALUES ('kept', '')") }
        #expect(try values(database) == ["kept"])
    }

    @Test func writesToSeveralKeychainsLandTogetherOrNotAtAll() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["one", "two"])
        let databases = try scratchDatabases(store, ["one", "two"])
        #expect(throws: (any Error).self) {
            try KeychainDatabase.writeTogether(databases) { connections in
                for db in connections { try db.execute(sql: "INSERT INTO keychain_metadata VALUES ('lost', '')") }
                throw Refused()
            }
        }
        try KeychainDatabase.writeTogether(databases) { connections in
            for db in connections { try db.execute(sql: "INSERT INTO keychain_metadata VALUES ('kept', '')") }
        }
        #expect(try databases.map(values) == [["kept"], ["kept"]])
    }

    /// After an error that SQLite answers by ending the transaction itself, the write fails as
    /// aborted instead of committing what ran after it on its own.
    @Test func aTransactionSQLiteEndedIsReportedAsAborted() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["one"])
        let database = try scratchDatabases(store, ["one"])[0]
        let failure = #expect(throws: KeychainError.self) {
            try database.write { db in
                try db.execute(sql: "INSERT INTO keychain_metadata VALUES ('lost', '')")
                // What a full disk does to a transaction, without filling a disk.
                try db.execute(sql: "ROLLBACK")
            }
        }
        #expect(failure?.detail?.contains("Transaction was aborted") == true)
        try database.write { db in try db.execute(sql: "INSERT INTO keychain_metadata VALUES ('kept', '')") }
        #expect(try values(database) == ["kept"])
    }
}
