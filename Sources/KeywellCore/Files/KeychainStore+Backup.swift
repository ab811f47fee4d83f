import Foundation
import KeywellProtocol
import KeywellSystem

/// `BackupKeychain` and `RestoreKeychain` (docs/cli.md, "Backing up").
extension KeychainStore {
    /// A consistent copy of the keychain at `target`, an absolute path, whether it is locked or
    /// not and while others write to it. An existing `target` is refused unless `replacing`.
    func backupKeychain(_ nameOrPath: String, to target: String, replacing: Bool) throws(KeychainError) {
        guard target.hasPrefix("/") else { throw .param("the backup path must be absolute") }
        let file = try file(at: location(nameOrPath))
        try KeychainBackup.write(keychainAt: file.database.path, to: target, replacing: replacing)
    }

    /// Installs the keychain file `backup` (an absolute path) as the keychain `nameOrPath`,
    /// locked, with the password it had when the copy was made. A file that is not a Keywell
    /// keychain is refused; so is an existing keychain of that name unless `replacing`, which
    /// deletes it once the new file is ready (its place in the search list and as default stays).
    /// Returns the new keychain's path.
    func restoreKeychain(from backup: String, as nameOrPath: String, replacing: Bool) throws(KeychainError) -> String {
        guard backup.hasPrefix("/") else { throw .param("the path of the file to restore must be absolute") }
        let location = try location(nameOrPath)
        _ = try KeychainBackup.checkBackup(backup)
        return try administering { (lifecycle: inout [KeychainLifecycleEvent]) throws(KeychainError) in
            if location.isInKeychainsFolder {
                try FileSafety.ensurePrivateDirectory(location.directory)
            } else if try !FileSafety.checkDirectory(location.directory, ownedByUser: false) {
                throw .param("folder \(location.directory) does not exist")
            }
            let exists = try KeychainFileSet.check(location.path) != nil
            if exists, !replacing {
                throw KeychainError(SecStatus.duplicateKeychain, detail: "\(location.displayName) (give -f to replace it)")
            }
            try KeychainBackup.install(backup, at: location.path) { () throws(KeychainError) in
                guard exists else { return }
                forget(location)
                for suffix in [""] + KeychainFileSet.companionSuffixes {
                    if unlink(location.path + suffix) != 0, Errno.current != .noEntry {
                        throw KeychainError(SecStatus.wrPerm, detail: "cannot delete \(location.path + suffix): \(Errno.current.description)")
                    }
                }
                lifecycle.append(.deleted(location.displayName))
            }
            lifecycle.append(.created(location.displayName))
            logger.info("restored keychain", metadata: ["keychain": "\(location.displayName)"])
            return location.path
        }
    }
}
