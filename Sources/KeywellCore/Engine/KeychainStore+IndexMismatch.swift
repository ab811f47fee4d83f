import Foundation

/// Rows a lookup left out because the index that found them disagrees with what they hold
/// (docs/file-format.md, "Indexes are not trusted"; docs/storage.md, "A damaged keychain file").
extension KeychainStore {
    /// Collects the row ids a lookup left out, then warns once about them.
    struct IndexMismatches {
        private(set) var rowIDs: [Int64] = []

        mutating func add(_ rowID: Int64) { rowIDs.append(rowID) }
    }

    /// Logs a warning naming the keychain whose index disagrees with its rows; nothing when none did.
    func warnAboutIndex(of file: KeychainFile, _ mismatches: IndexMismatches) {
        guard !mismatches.rowIDs.isEmpty else { return }
        logger.warning(
            "keychain index disagrees with its rows: lookups leave those rows out; check the file with PRAGMA integrity_check or restore it from a backup",
            metadata: [
                "keychain": "\(file.location.displayName)", "path": "\(file.location.path)",
                "rows": "\(mismatches.rowIDs.map(String.init).joined(separator: ","))",
            ])
    }
}
