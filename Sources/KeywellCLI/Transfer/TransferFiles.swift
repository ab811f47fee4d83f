import KeywellSystem
#if canImport(Glibc)
import Glibc
#endif

/// The files of `export` and `import`: a new export file is created 0600 and never over an
/// existing file or symlink (O_EXCL), so that nothing, plaintext or not, lands in a file
/// someone else prepared.
enum TransferFiles {
    /// A new file; nil with errno set when it exists or cannot be made.
    static func create(_ path: String) -> Int32? {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        return fd >= 0 ? fd : nil
    }

    static func openForReading(_ path: String) -> Int32? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        return fd >= 0 ? fd : nil
    }

    /// The whole file, at most `limit` bytes; nil when larger or unreadable.
    static func readAll(_ fd: Int32, limit: Int) -> [UInt8]? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = retryingOnInterrupt { buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }
            if count < 0 { return nil }
            if count == 0 { return bytes }
            bytes += buffer[0..<count]
            if bytes.count > limit { return nil }
        }
    }

    /// False with errno set when the write failed.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = retryingOnInterrupt { bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
            if written < 0 {
                return false
            }
            offset += written
        }
        return true
    }

    static var lastError: String { Errno.current.description }
}
