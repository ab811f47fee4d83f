import Foundation
import KeywellProtocol
import KeywellSystem

/// What `stat` says about a file, enough to notice that a path now names another file.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: timespec

    static func == (a: FileIdentity, b: FileIdentity) -> Bool {
        a.device == b.device && a.inode == b.inode && a.size == b.size
            && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
    }

    /// Same file, whatever happened to its contents.
    func isSameFile(as other: FileIdentity) -> Bool {
        device == other.device && inode == other.inode
    }
}

/// Keywell's file rules: folders 0700, files 0600, owned by the user and writable by nobody else.
/// A keychain's own files follow the stricter `KeychainFileSet` rule.
enum FileSafety {
    static let privateFileMode: mode_t = 0o600
    static let privateDirectoryMode: mode_t = 0o700

    /// The file's identity, or nil when nothing is there. Throws when the file is not the user's
    /// alone to write.
    static func checkPrivateFile(_ path: String) throws(KeychainError) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if Errno.current == .noEntry || Errno.current == .notDirectory { return nil }
            throw KeychainError(SecStatus.wrPerm, detail: "cannot inspect \(path): \(Errno.current.description)")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw KeychainError(SecStatus.invalidKeychain, detail: "\(path) is not a regular file")
        }
        try checkOwnerAndMode(path, info, what: "file", allowSticky: false)
        return FileIdentity(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size), modified: info.st_mtim)
    }

    /// Refuses a folder another user owns or others can write. A folder we did not make (the
    /// parent of a keychain given by path) may also be root's, or shared with the sticky bit set
    /// (like /tmp), since then nobody else can replace our files in it.
    static func checkDirectory(_ path: String, ownedByUser: Bool) throws(KeychainError) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if Errno.current == .noEntry { return false }
            throw KeychainError(SecStatus.wrPerm, detail: "cannot inspect \(path): \(Errno.current.description)")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw KeychainError(SecStatus.wrPerm, detail: "\(path) is not a folder")
        }
        try checkOwnerAndMode(path, info, what: "folder", allowSticky: !ownedByUser, allowRoot: !ownedByUser)
        return true
    }

    /// Makes `path` (and missing parents) as 0700 folders, then checks it.
    static func ensurePrivateDirectory(_ path: String) throws(KeychainError) {
        if try checkDirectory(path, ownedByUser: true) { return }
        let parent = (path as NSString).deletingLastPathComponent
        if parent != path, !FileManager.default.fileExists(atPath: parent) {
            try ensurePrivateDirectory(parent)
        }
        if mkdir(path, privateDirectoryMode) != 0, Errno.current != .exists {
            throw KeychainError(SecStatus.wrPerm, detail: "cannot create folder \(path): \(Errno.current.description)")
        }
        // mkdir's mode is filtered by the umask; set it exactly.
        chmod(path, privateDirectoryMode)
        _ = try checkDirectory(path, ownedByUser: true)
    }

    private static func checkOwnerAndMode(
        _ path: String, _ info: stat, what: String, allowSticky: Bool, allowRoot: Bool = false
    ) throws(KeychainError) {
        let owner = info.st_uid
        guard owner == geteuid() || (allowRoot && owner == 0) else {
            throw KeychainError(
                SecStatus.wrPerm, detail: "refusing \(what) \(path): it is owned by UID \(owner), not by UID \(geteuid())")
        }
        let othersCanWrite = info.st_mode & (S_IWGRP | S_IWOTH) != 0
        let sticky = info.st_mode & S_ISVTX != 0
        if othersCanWrite && !(allowSticky && sticky) {
            let mode = String(info.st_mode & 0o7777, radix: 8)
            let fix = what == "file" ? "chmod 600" : "chmod 700"
            throw KeychainError(
                SecStatus.wrPerm,
                detail: "refusing \(what) \(path): group or others can write it (mode 0\(mode)); run `\(fix) \(path)`")
        }
    }
}
