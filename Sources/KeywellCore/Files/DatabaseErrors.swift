import Foundation
import GRDB
import GRDBSQLite
import KeywellProtocol
import KeywellSystem

/// An SQLite error with the errno of the system call that failed under it. SQLite reports only
/// ENOSPC as SQLITE_FULL; a disk quota (EDQUOT) or a file size limit (EFBIG) comes back as a
/// plain I/O error, and the caller still needs to hear that there is no room (docs/storage.md).
struct SQLiteSystemFailure: Error {
    let error: DatabaseError
    let systemErrno: Int32

    /// `error` with the errno of `db`'s last failed file call when it is an I/O error, else
    /// `error` as it is. SQLite keeps that errno per open file (the database and its WAL), not
    /// for the statement: a commit's failed WAL write is found only there.
    static func annotating(_ error: any Error, _ db: Database) -> any Error {
        guard let error = error as? DatabaseError, error.resultCode == .SQLITE_IOERR else { return error }
        let connection = db.sqliteConnection
        var mainErrno: Int32 = 0
        _ = sqlite3_file_control(connection, "main", SQLITE_FCNTL_LAST_ERRNO, &mainErrno)
        var walErrno: Int32 = 0
        var wal: UnsafeMutablePointer<sqlite3_file>?
        if sqlite3_file_control(connection, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal) == SQLITE_OK,
           let wal, let fileControl = wal.pointee.pMethods?.pointee.xFileControl {
            _ = fileControl(wal, SQLITE_FCNTL_LAST_ERRNO, &walErrno)
        }
        let errnos = [mainErrno, walErrno]
        return SQLiteSystemFailure(
            error: error, systemErrno: errnos.first(where: isNoRoom) ?? errnos.first { $0 != 0 } ?? 0)
    }

    /// The write failed for lack of room: the disk, a quota or the file size limit.
    static func isNoRoom(_ systemErrno: Int32) -> Bool { [ENOSPC, EDQUOT, EFBIG].contains(systemErrno) }
}

extension KeychainError {
    /// The status for an error from SQLite (through GRDB) on the keychain file at `path`.
    static func from(_ error: any Error, path: String) -> KeychainError {
        if let error = error as? KeychainError { return error }
        if let mismatch = error as? UnexpectedChangeCount {
            return KeychainError(SecStatus.decode, detail: "\(path): \(mismatch.description); nothing was changed")
        }
        if let failure = error as? SQLiteSystemFailure {
            let message = failure.error.message ?? "SQLite error \(failure.error.extendedResultCode.rawValue)"
            let detail = "\(path): \(message) (\(Errno(rawValue: failure.systemErrno).description))"
            return KeychainError(SQLiteSystemFailure.isNoRoom(failure.systemErrno) ? SecStatus.diskFull : SecStatus.io, detail: detail)
        }
        guard let error = error as? DatabaseError else {
            return KeychainError(SecStatus.io, detail: "\(path): \(error)")
        }
        let detail = "\(path): \(error.message ?? "SQLite error \(error.resultCode.rawValue)")"
        switch error.resultCode {
        case .SQLITE_CONSTRAINT where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE:
            // The only unique constraints an item can break are its class's primary key.
            return KeychainError(SecStatus.duplicateItem)
        case .SQLITE_FULL:
            return KeychainError(SecStatus.diskFull, detail: detail)
        case .SQLITE_INTERRUPT:
            // Only `SQLTimeLimit` interrupts keychain SQL.
            return KeychainError(
                SecStatus.io, detail: "\(path): SQL ran past its time limit and was stopped; the file may hold SQL Keywell did not write")
        case .SQLITE_NOTADB, .SQLITE_CORRUPT:
            return KeychainError(SecStatus.invalidKeychain, detail: detail)
        case .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_AUTH:
            return KeychainError(SecStatus.wrPerm, detail: detail)
        default:
            return KeychainError(SecStatus.io, detail: detail)
        }
    }
}

extension KeychainError {
    /// Runs database code inside a typed-throws function.
    static func rethrowing<T>(path: String, _ body: () throws -> T) throws(KeychainError) -> T {
        do {
            return try body()
        } catch {
            throw from(error, path: path)
        }
    }
}
