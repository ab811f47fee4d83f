import CSQLiteHardening
import GRDB
import GRDBSQLite

/// The options every connection to a keychain file (or to a file on its way to becoming one:
/// a backup, a restore) sets before it reads anything (docs/file-format.md, "What a keychain file
/// may hold"). The schema check refuses SQL that is not Keywell's; these limit what such SQL
/// could do if it ran anyway: no functions with side effects or virtual tables from the schema
/// (trusted_schema off), no writes to the schema or to pages behind SQLite's back (defensive).
/// Both exist since SQLite 3.31 (Debian 12 has 3.40).
enum ConnectionHardening {
    static func harden(_ db: Database, timeLimit: SQLTimeLimit) throws {
        var defensive: Int32 = 0
        var trusted: Int32 = 1
        let connection = db.sqliteConnection
        guard keywell_sqlite_set_defensive(connection, 1, &defensive) == SQLITE_OK, defensive == 1,
              keywell_sqlite_set_trusted_schema(connection, 0, &trusted) == SQLITE_OK, trusted == 0
        else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "this SQLite cannot set defensive mode and an untrusted schema")
        }
        try db.execute(sql: "PRAGMA trusted_schema = OFF")
        timeLimit.install(on: db)
    }
}
