import Foundation
import KeywellProtocol
import KeywellSystem

/// A keychain file and the three files SQLite keeps beside it, `-wal`, `-shm` and `-journal`
/// (docs/file-format.md, "The four files").
///
/// SQLite opens those three by name and creates them only if they are missing. In a folder
/// others can write (a sticky one such as /tmp: Keywell refuses any other), another user can
/// create the names first; SQLite would then write the keychain's header and items into that
/// user's files, or play a journal they wrote back into the keychain. So before SQLite touches a
/// keychain, each of the four is either absent or a regular file of the user's, mode 0600 or
/// stricter, with no second name; and the three companions that are absent are created here,
/// empty and 0600, with `O_EXCL`. From then on the names are the user's: in a sticky folder
/// nobody else can remove or rename them, so SQLite opening them by name opens these files.
///
/// SQLite removes `-wal` and `-shm` when the last connection closes, which would give the names
/// back; keychain connections keep them instead (`KeychainDatabase.configuration`), and every open
/// goes through `prepareForOpening` anyway, so names lost to another program are claimed again
/// or refused before SQLite looks.
enum KeychainFileSet {
    static let companionSuffixes = ["-wal", "-shm", "-journal"]

    /// Before SQLite opens the keychain at `path`: its identity, and its companions are the user's.
    /// `errSecNoSuchKeychain` when there is no file.
    static func prepareForOpening(_ path: String) throws(KeychainError) -> FileIdentity {
        guard let identity = try check(path) else {
            throw KeychainError(SecStatus.noSuchKeychain, detail: path)
        }
        try claimCompanions(of: path)
        return identity
    }

    /// Before a new keychain is put at `path`: its companions are the user's, so nothing planted
    /// there is ever written to.
    static func claimCompanions(of path: String) throws(KeychainError) {
        for suffix in companionSuffixes { try claim(path + suffix) }
    }

    /// Every companion of `path` that exists still follows the rule (none is created).
    static func checkCompanions(of path: String) throws(KeychainError) {
        for suffix in companionSuffixes { _ = try check(path + suffix) }
    }

    /// The identity of the file at `path`, nil when nothing is there; throws unless it follows
    /// the rule. Judged through a descriptor opened without following a symlink (`O_PATH`, which
    /// opens neither a fifo nor a device), so what is judged is what is at the path.
    static func check(_ path: String) throws(KeychainError) -> FileIdentity? {
        let file: FileDescriptor
        do throws(Errno) { file = try .open(path, openPathOnly | O_NOFOLLOW) } catch {
            if error == .noEntry || error == .notDirectory { return nil }
            throw KeychainError(SecStatus.wrPerm, detail: "cannot inspect \(path): \(error.description)")
        }
        return try file.closeAfter { () throws(KeychainError) in try check(path, descriptor: file.rawValue) }
    }

    /// Makes `path` an empty 0600 file of the user's unless something is there; what is there
    /// must follow the rule.
    private static func claim(_ path: String) throws(KeychainError) {
        // A file removed between the two opens was someone else's: look again, a few times.
        for _ in 0..<3 {
            let created: FileDescriptor
            do throws(Errno) {
                created = try .open(path, O_CREAT | O_EXCL | O_NOFOLLOW | O_RDWR, permissions: FileSafety.privateFileMode)
            } catch {
                guard error == .exists else {
                    throw KeychainError(SecStatus.wrPerm, detail: "cannot create \(path): \(error.description)")
                }
                if try check(path) != nil { return }
                continue
            }
            try created.closeAfter { () throws(KeychainError) in
                fchmod(created.rawValue, FileSafety.privateFileMode)  // the umask may have taken bits away
                _ = try check(path, descriptor: created.rawValue)
            }
            return
        }
        throw KeychainError(SecStatus.wrPerm, detail: "refusing \(path): something keeps creating and removing it")
    }

    private static func check(_ path: String, descriptor: Int32) throws(KeychainError) -> FileIdentity {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw KeychainError(SecStatus.wrPerm, detail: "cannot inspect \(path): \(Errno.current.description)")
        }
        let kind = info.st_mode & S_IFMT
        guard kind == S_IFREG else {
            throw KeychainError(SecStatus.wrPerm, detail: "refusing \(path): it is \(describe(kind)), not a regular file")
        }
        guard info.st_uid == geteuid() else {
            throw KeychainError(
                SecStatus.wrPerm, detail: "refusing \(path): it is owned by UID \(info.st_uid), not by UID \(geteuid())")
        }
        let mode = info.st_mode & 0o7777
        guard mode & 0o077 == 0 else {
            throw KeychainError(
                SecStatus.wrPerm,
                detail: "refusing \(path): group or others can read or write it (mode 0\(String(mode, radix: 8))); run `chmod 600 \(path)`")
        }
        guard info.st_nlink == 1 else {
            throw KeychainError(
                SecStatus.wrPerm,
                detail: "refusing \(path): it has \(info.st_nlink) names (hard links), and whoever controls another one can change it")
        }
        return FileIdentity(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size), modified: info.st_mtim)
    }

    /// Linux's O_PATH (the same value on x86 and ARM), which Glibc's Swift module leaves out.
    private static let openPathOnly: Int32 = 0o10000000

    private static func describe(_ kind: mode_t) -> String {
        switch kind {
        case S_IFLNK: "a symbolic link"
        case S_IFDIR: "a folder"
        case S_IFIFO: "a named pipe"
        case S_IFSOCK: "a socket"
        case S_IFCHR, S_IFBLK: "a device"
        default: "of another kind"
        }
    }
}
