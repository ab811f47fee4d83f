import CSodium
import KeywellProtocol
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// `AccessList.executableIdentity` of a program as it is on disk now: what `-T path` and
/// `SecTrustedApplicationCreateFromPath` trust (docs/access-control.md).
public enum ExecutableIdentity {
    /// The identity of the file at `path` (relative paths from the working directory), or
    /// `errSecParam` naming the path when it is missing or not a readable regular file. A
    /// program only root can replace, judged on its real path as keywelld judges a caller, is
    /// named by that path; any other is read once, in blocks (linear in its size), and hashed.
    public static func of(path: String) throws(KeychainError) -> String {
        guard let resolved = realpath(path, nil) else {
            throw .param("\(path): \(Errno.current.description)")
        }
        let real = String(cString: resolved)
        free(resolved)
        let file: FileDescriptor
        do { file = try FileDescriptor.open(real, O_RDONLY) } catch { throw .param("\(real): \(error.description)") }
        return try file.closeAfter { () throws(KeychainError) in try identity(of: file, real: real) }
    }

    /// The identity of the file open at `file`, which is at `real`.
    private static func identity(of file: FileDescriptor, real: String) throws(KeychainError) -> String {
        guard let status = try? file.status(), (status.st_mode & S_IFMT) == S_IFREG else {
            throw .param("\(real) is not a regular file")
        }
        if RootOnlyProgram.isRootOnly(file, path: real) { return AccessList.executableIdentity(path: real, sha256Hex: nil) }
        guard sodium_init() >= 0 else { throw KeychainError(SecStatus.notAvailable, detail: "libsodium did not start") }
        var state = crypto_hash_sha256_state()
        crypto_hash_sha256_init(&state)
        var block = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let read = block.withUnsafeMutableBytes { buffer in Result { () throws(Errno) in try file.read(into: buffer) } }
            let count: Int
            do { count = try read.get() } catch { throw .param("\(real): \(error.description)") }
            if count == 0 { break }
            crypto_hash_sha256_update(&state, block, UInt64(count))
        }
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        crypto_hash_sha256_final(&state, &digest)
        let hex = LowercaseHex.string(digest)
        return AccessList.executableIdentity(path: real, sha256Hex: hex)
    }

    /// The identity of the running program (`/proc/self/exe`).
    public static func ofThisProgram() throws(KeychainError) -> String {
        try of(path: "/proc/self/exe")
    }
}
