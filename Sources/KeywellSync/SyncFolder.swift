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
        let file: FileDescriptor
        do { file = try FileDescriptor.open(path + "/" + name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) } catch {
            if error == .noEntry { return nil }
            throw SyncRefusal("it cannot be opened: \(error.description)")
        }
        return try file.closeAfter { () throws(SyncRefusal) in
            guard let info = try? file.status(), (info.st_mode & S_IFMT) == S_IFREG else { throw SyncRefusal("it is not a regular file") }
            guard Int(info.st_size) <= limit else { throw SyncRefusal("it is larger than \(limit) bytes") }
            // The size fstat gave, read from the start: a file growing meanwhile cannot make it endless.
            var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
            guard (try? bytes.withUnsafeMutableBytes { buffer throws(Errno) in try file.read(filling: buffer) }) == true else {
                throw SyncRefusal("it could not be read whole")
            }
            return bytes
        }
    }

    /// Writes `bytes` as `name`: a temporary file the scan passes over, synced, then renamed, so
    /// the engine and other machines never see half a file.
    public func write(_ bytes: [UInt8], as name: String) throws(KeychainError) {
        let temporary = path + "/" + RecordName.temporaryPrefix + Sodium.randomData(count: 8).map { String($0, radix: 16) }.joined()
        let file: FileDescriptor
        do { file = try FileDescriptor.open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW, permissions: 0o600) } catch {
            throw failure("create a file in", path, error)
        }
        let written = file.closeAfter { () -> Errno? in
            do throws(Errno) {
                try file.writeAll(bytes)
                try file.sync()
                return nil
            } catch { return error }
        }
        let renamed = written == nil && rename(temporary, path + "/" + name) == 0
        guard renamed else {
            let error = failure("write", path + "/" + name, written ?? .current)
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

    private func failure(_ action: String, _ path: String, _ error: Errno) -> KeychainError {
        KeychainError(error == .noSpace ? SecStatus.diskFull : SecStatus.io, detail: "cannot \(action) \(path): \(error.description)")
    }
}
