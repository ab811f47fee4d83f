import CKeywellControl
import KeywellSystem
#if canImport(Glibc)
import Glibc
#endif

/// The per-user file that holds the login unlock's authorization value, readable by root alone:
/// `/var/lib/keywell/login-unlock/<uid>`, the file 0600 and its folder 0700, both root's
/// (docs/login-unlock.md, "The files"). The PAM module reads it at a login; only root writes it.
struct AuthorizationFile {
    let uid: uid_t

    static let folder = KW_LOGIN_UNLOCK_FOLDER

    var path: String { "\(Self.folder)/\(uid)" }

    enum Failure: Error {
        case io(String)
    }

    /// 32 fresh random bytes (the system generator: getrandom(2)).
    static func newValue() -> SecretBytes {
        var generator = SystemRandomNumberGenerator()
        let value = SecretBytes(count: Int(KW_LOGIN_UNLOCK_VALUE_LENGTH))
        value.withUnsafeMutableBytes { for index in $0.indices { $0[index] = UInt8.random(in: .min ... .max, using: &generator) } }
        return value
    }

    /// Writes the value (replacing an older one at once), after making sure of the folders.
    func write(_ value: SecretBytes) throws(Failure) {
        try Self.ensureFolder("/var/lib/keywell", mode: 0o755)
        try Self.ensureFolder(Self.folder, mode: 0o700)
        let temporary = path + ".tmp"
        unlink(temporary)
        let file: FileDescriptor
        do { file = try FileDescriptor.open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW, permissions: 0o600) } catch {
            throw .io("cannot create \(temporary): \(error)")
        }
        // Written from locked memory where it lies, whole however many calls that takes.
        let ok = file.closeAfter {
            (try? value.withUnsafeBytes { bytes throws(Errno) in try file.writeAll(bytes) }) != nil
                && fchown(file.rawValue, 0, 0) == 0 && fchmod(file.rawValue, 0o600) == 0 && (try? file.sync()) != nil
        }
        guard ok, rename(temporary, path) == 0 else {
            let failure = Failure.io("cannot write \(path): \(Self.reason())")
            unlink(temporary)
            throw failure
        }
    }

    /// Removes it; true when there was one.
    @discardableResult
    func remove() -> Bool { unlink(path) == 0 }

    var exists: Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// A folder root owns that nobody else can write (and, for the value's own folder, enter).
    private static func ensureFolder(_ folder: String, mode: mode_t) throws(Failure) {
        if mkdir(folder, mode) != 0, Errno.current != .exists { throw .io("cannot create \(folder): \(reason())") }
        var info = stat()
        guard lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == 0 else {
            throw .io("\(folder) is not a folder of root's")
        }
        if info.st_mode & 0o7777 != mode, chmod(folder, mode) != 0 { throw .io("cannot set the mode of \(folder): \(reason())") }
    }

    private static func reason() -> String { Errno.current.description }
}
