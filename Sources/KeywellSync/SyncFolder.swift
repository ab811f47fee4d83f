import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSystem

/// The folder a sync engine carries, as files: names listed, files read with their caps, this
/// machine's files written whole (a temporary name renamed into place, 0600) and removed.
/// Nothing here knows what the files mean.
public struct SyncFolder: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// Refuses a folder that is not a folder, or another user's, or one others can write: they
    /// could not read the records, but they could remove or replace them.
    public func check() throws(KeychainError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw KeychainError(SecStatus.noSuchKeychain, detail: "the sync folder \(path) does not exist: \(Errno.current.description)")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw .param("\(path) is not a folder") }
        guard info.st_uid == geteuid() else { throw KeychainError(SecStatus.wrPerm, detail: "the sync folder \(path) is another user's") }
        guard info.st_mode & 0o022 == 0 else {
            throw KeychainError(SecStatus.wrPerm, detail: "others can write the sync folder \(path) (chmod go-w)")
        }
    }

    /// Every entry's name, at most `SyncLimits.filesPerFolder` (the rest are left for later).
    public func names() throws(KeychainError) -> [String] {
        guard let directory = opendir(path) else {
            throw KeychainError(SecStatus.io, detail: "cannot read the sync folder \(path): \(Errno.current.description)")
        }
        defer { closedir(directory) }
        var names: [String] = []
        while names.count < SyncLimits.filesPerFolder, let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// A regular file's bytes, refused past `limit` bytes; nil when it is gone.
    public func read(_ name: String, limit: Int) throws(SyncRefusal) -> [UInt8]? {
        let descriptor = open(path + "/" + name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            if Errno.current == .noEntry { return nil }
            throw SyncRefusal("it cannot be opened: \(Errno.current.description)")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { throw SyncRefusal("it is not a regular file") }
        guard Int(info.st_size) <= limit else { throw SyncRefusal("it is larger than \(limit) bytes") }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var offset = 0
        while offset < bytes.count {
            let count = retryingOnInterrupt { bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + offset, $0.count - offset, off_t(offset)) } }
            guard count > 0 else { throw SyncRefusal("it could not be read whole") }
            offset += count
        }
        return bytes
    }

    /// Writes `bytes` as `name`: a temporary file the scan passes over, synced, then renamed, so
    /// the engine and other machines never see half a file.
    public func write(_ bytes: [UInt8], as name: String) throws(KeychainError) {
        let temporary = path + "/" + RecordName.temporaryPrefix + Sodium.randomData(count: 8).map { String($0, radix: 16) }.joined()
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw failure("create a file in", path) }
        var ok = bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = retryingOnInterrupt { Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset) }
                if written < 0 { return false }
                offset += written
            }
            return true
        }
        ok = ok && fsync(descriptor) == 0
        close(descriptor)
        guard ok, rename(temporary, path + "/" + name) == 0 else {
            let error = failure("write", path + "/" + name)
            unlink(temporary)
            throw error
        }
    }

    public func remove(_ name: String) {
        unlink(path + "/" + name)
    }

    /// Removes temporary files a crash left behind (this process writes each one whole first).
    public func removeStaleTemporaries(olderThan seconds: Int = 3600) {
        guard let names = try? names() else { return }
        let now = time(nil)
        for name in names where name.hasPrefix(RecordName.temporaryPrefix) {
            var info = stat()
            if lstat(path + "/" + name, &info) == 0, Int(now - info.st_mtim.tv_sec) > seconds { remove(name) }
        }
    }

    private func failure(_ action: String, _ path: String) -> KeychainError {
        KeychainError(Errno.current == .noSpace ? SecStatus.diskFull : SecStatus.io, detail: "cannot \(action) \(path): \(Errno.current.description)")
    }
}
