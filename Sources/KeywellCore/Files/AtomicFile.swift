import Foundation
import KeywellProtocol
import KeywellSystem

/// Replaces a small file so that readers (and a crash) see the old or the new contents, never a mix.
public enum AtomicFile {
    public static func write(_ data: Data, to path: String) throws(KeychainError) {
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, FileSafety.privateFileMode)
        guard descriptor >= 0 else { throw failure("create", temporary) }
        var ok = fchmod(descriptor, FileSafety.privateFileMode) == 0
        ok = ok && data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = retryingOnInterrupt { Foundation.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset) }
                if written < 0 { return false }
                offset += written
            }
            return true
        }
        ok = ok && fsync(descriptor) == 0
        close(descriptor)
        guard ok, rename(temporary, path) == 0 else {
            let error = failure("write", path)
            unlink(temporary)
            throw error
        }
        let folder = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }

    private static func failure(_ action: String, _ path: String) -> KeychainError {
        KeychainError(SecStatus.io, detail: "cannot \(action) \(path): \(Errno.current.description)")
    }
}
