import Foundation
import KeywellProtocol
import KeywellSystem

/// Replaces a small file so that readers (and a crash) see the old or the new contents, never a mix.
public enum AtomicFile {
    public static func write(_ data: Data, to path: String) throws(KeychainError) {
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        let file: FileDescriptor
        do throws(Errno) { file = try .open(temporary, O_CREAT | O_EXCL | O_WRONLY, permissions: FileSafety.privateFileMode) } catch {
            throw failure("create", temporary, error)
        }
        var written: Errno?
        file.closeAfter {
            do throws(Errno) {
                guard fchmod(file.rawValue, FileSafety.privateFileMode) == 0 else { throw .current }
                try file.writeAll(data)
                try file.sync()
            } catch { written = error }
        }
        if let written {
            unlink(temporary)
            throw failure("write", path, written)
        }
        guard rename(temporary, path) == 0 else {
            let error = failure("write", path, .current)
            unlink(temporary)
            throw error
        }
        // Best effort: the rename is done; this only hurries it to the disk.
        if let folder = try? FileDescriptor.open((path as NSString).deletingLastPathComponent, O_RDONLY) {
            folder.closeAfter { try? folder.sync() }
        }
    }

    private static func failure(_ action: String, _ path: String, _ error: Errno) -> KeychainError {
        KeychainError(SecStatus.io, detail: "cannot \(action) \(path): \(error.description)")
    }
}
