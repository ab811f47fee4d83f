import Foundation
import KeywellSystem

/// Where keywelld's log lines go (docs/access-control.md, "A denial is never silent"): standard
/// error, which journald or a terminal reads; when standard error is not open (closed, or
/// `/dev/null`, as pam_keywell starts keywelld), the file `$XDG_STATE_HOME/keywell/keywelld.log`
/// (folder 0700, file 0600), which starts afresh past `maxBytes`, its old lines kept once as
/// `keywelld.log.1`.
final class DaemonLogFile: Sendable {
    /// Bytes of one file before it is rotated: weeks of denials, a bounded share of the disk.
    static let maxBytes: off_t = 1 << 20
    static let fileName = "keywelld.log"

    private let path: String?
    /// nil: no file could be opened, and lines are dropped.
    private let descriptor = Protected<FileDescriptor?>(FileDescriptor(rawValue: STDERR_FILENO))

    /// Standard error when it is open; else the file in the state folder (nil path: none could be
    /// made, and lines are dropped as they would be on `/dev/null`).
    init(environment: [String: String]) {
        guard !Self.standardErrorIsOpen() else {
            path = nil
            return
        }
        path = Self.filePath(environment)
        if let path { descriptor.withLock { $0 = Self.open(path) } }
    }

    /// The file lines go to when standard error is not open.
    static func filePath(_ environment: [String: String]) -> String? {
        stateFolder(environment).map { $0 + "/" + fileName }
    }

    /// keywelld's state folder, `$XDG_STATE_HOME/keywell` (made 0700 when missing); nil when
    /// neither `XDG_STATE_HOME` nor `HOME` is an absolute path.
    static func stateFolder(_ environment: [String: String]) -> String? {
        let stateHome = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 + "/.local/state" : nil }
        guard let stateHome else { return nil }
        let folder = stateHome + "/keywell"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        chmod(folder, 0o700)
        return folder
    }

    /// Writes one whole line (one `write`, so lines of several threads never interleave).
    func write(_ line: [UInt8]) {
        descriptor.withLock { fd in
            if let path, let file = fd, let status = try? file.status(), status.st_size + off_t(line.count) > Self.maxBytes {
                try? file.close()
                rename(path, path + ".1")
                fd = Self.open(path)
            }
            _ = line.withUnsafeBytes { try? fd?.write($0) }
        }
    }

    private static func open(_ path: String) -> FileDescriptor? {
        try? FileDescriptor.open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW, permissions: 0o600)
    }

    /// Whether standard error leads anywhere: open, and not `/dev/null`.
    static func standardErrorIsOpen() -> Bool {
        var status = stat()
        guard fstat(STDERR_FILENO, &status) == 0 else { return false }
        var null = stat()
        guard status.st_mode & S_IFMT == S_IFCHR, stat("/dev/null", &null) == 0 else { return true }
        return status.st_rdev != null.st_rdev
    }
}
