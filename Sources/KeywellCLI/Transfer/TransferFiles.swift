import KeywellSystem
#if canImport(Glibc)
import Glibc
#endif

/// The files of `export` and `import`: a new export file is created 0600 and never over an
/// existing file or symlink (O_EXCL), so that nothing, plaintext or not, lands in a file
/// someone else prepared.
enum TransferFiles {
    /// A new file, never an existing file or symlink.
    static func create(_ path: String) throws(Errno) -> FileDescriptor {
        try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, permissions: 0o600)
    }

    static func openForReading(_ path: String) throws(Errno) -> FileDescriptor {
        try FileDescriptor.open(path, O_RDONLY)
    }
}
