import GRDB
import KeywellProtocol

extension KeychainError {
    /// The status for an error from SQLite (through GRDB) on the keychain file at `path`.
    static func from(_ error: any Error, path: String) -> KeychainError {
        if let error = error as? KeychainError { return error }
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
