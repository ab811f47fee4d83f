import Foundation
import GRDB
import GRDBSQLite

/// A cached GRDB statement driven through SQLite's C API. Items are wide rows (48 columns), and
/// binding or reading them through GRDB's generic `StatementArguments` and `Row` cost more than
/// the SQLite work itself; binding and reading columns directly keeps adds and lookups cheap.
/// GRDB still owns the connection, the statement cache, transactions and the busy timeout.
struct RawStatement {
    private let db: Database
    private let sql: String
    private let handle: OpaquePointer

    /// SQLite copies bound strings and blobs (SQLITE_TRANSIENT), so Swift's buffers may go.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    init(_ db: Database, sql: String, values: [DatabaseValue]) throws {
        self.db = db
        self.sql = sql
        handle = try db.cachedStatement(sql: sql).sqliteStatement
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            switch value.storage {
            case .null:
                sqlite3_bind_null(handle, index)
            case .int64(let number):
                sqlite3_bind_int64(handle, index, number)
            case .double(let number):
                sqlite3_bind_double(handle, index, number)
            case .string(var text):
                // With its byte count, so that a NUL inside the text is kept.
                text.withUTF8 { utf8 in
                    if let base = utf8.baseAddress {
                        let characters = UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self)
                        sqlite3_bind_text(handle, index, characters, Int32(utf8.count), Self.transient)
                    } else {
                        // A NULL pointer would bind NULL, not empty text.
                        sqlite3_bind_text(handle, index, "", 0, Self.transient)
                    }
                }
            case .blob(let bytes):
                _ = bytes.withUnsafeBytes { buffer in
                    if let base = buffer.baseAddress {
                        sqlite3_bind_blob(handle, index, base, Int32(buffer.count), Self.transient)
                    } else {
                        // A NULL pointer would bind NULL, not an empty blob.
                        sqlite3_bind_zeroblob(handle, index, 0)
                    }
                }
            }
        }
    }

    /// Runs a statement that returns no rows.
    func run() throws {
        while try step() {}
    }

    /// Advances to the next row; false when there are no more.
    func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW:
            return true
        case SQLITE_DONE:
            sqlite3_reset(handle)
            return false
        default:
            let connection = db.sqliteConnection
            let code = sqlite3_extended_errcode(connection)
            let message = String(cString: sqlite3_errmsg(connection))
            // Releases the statement's read or write lock.
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
        }
    }

    /// Stops before the last row, releasing the statement's locks.
    func finish() {
        sqlite3_reset(handle)
    }

    func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    /// SQLITE_NULL, SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT or SQLITE_BLOB.
    func storageType(_ column: Int32) -> Int32 {
        sqlite3_column_type(handle, column)
    }

    func real(_ column: Int32) -> Double {
        sqlite3_column_double(handle, column)
    }

    func integer(_ column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    func text(_ column: Int32) -> String {
        guard let bytes = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeRawBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    func blob(_ column: Int32) -> Data {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    /// A 16-byte blob as a UUID, read in place; nil for anything else.
    func uuid(_ column: Int32) -> UUID? {
        // The pointer before the count, as SQLite asks (a conversion would change the count).
        guard let bytes = sqlite3_column_blob(handle, column), sqlite3_column_bytes(handle, column) == 16 else { return nil }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(start: bytes, count: 16)) }
        return UUID(uuid: value)
    }

    /// A text or blob column's bytes, valid only inside `body` (and until the next step).
    func withBytes<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        // The pointer before the count, as in `uuid`.
        let bytes = sqlite3_column_blob(handle, column)
        return body(UnsafeRawBufferPointer(start: bytes, count: bytes == nil ? 0 : Int(sqlite3_column_bytes(handle, column))))
    }
}
