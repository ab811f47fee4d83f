import Foundation
import KeywellSystem

/// Whether a process runs in a Flatpak sandbox, checked as xdg-desktop-portal checks it: a
/// regular `/.flatpak-info` in the process's root that names a valid app id and a Flatpak
/// instance, and that instance's `bwrapinfo.json` in the user's runtime folder naming a live
/// process. Beyond the portal, the file is never reached through a symlink (which would be
/// followed in the daemon's root, not the sandbox's) and a FIFO in its place cannot block.
///
/// This tells a Flatpak app from an unconfined program; it cannot tell Flatpak's sandbox from
/// one an unconfined program made with bwrap itself (see docs/access-control.md).
enum FlatpakSandbox {
    /// Largest `bwrapinfo.json` read (bwrap writes a few dozen bytes).
    static let maximumInstanceInfo = 4096

    /// nil when the process is not in a sandbox (no `/.flatpak-info`); throws when there is one
    /// that cannot be trusted.
    static func info(root: FileDescriptor, runtimeDirectory: String?) throws(IdentityError) -> FlatpakInfo? {
        let opened = openat(root.rawValue, ".flatpak-info", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard opened >= 0 else {
            if Errno.current == .noEntry { return nil }
            throw .untrustedSandbox("/.flatpak-info cannot be opened: \(ProcessPin.errorText())")
        }
        let descriptor = FileDescriptor(rawValue: opened)
        defer { try? descriptor.close() }
        var status = stat()
        guard fstat(descriptor.rawValue, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw .untrustedSandbox("/.flatpak-info is not a regular file")
        }
        let (bytes, truncated) = try ProcessPin.read(descriptor, limit: FlatpakInfo.maximumSize)
        guard !truncated else { throw .untrustedSandbox("/.flatpak-info is larger than \(FlatpakInfo.maximumSize) bytes") }
        let info: FlatpakInfo
        do { info = try FlatpakInfo(parsing: bytes) } catch { throw .untrustedSandbox("/.flatpak-info: \(error)") }
        try checkInstance(info.instanceID, runtimeDirectory: runtimeDirectory)
        return info
    }

    /// Flatpak records each sandbox it runs in `$XDG_RUNTIME_DIR/.flatpak/<instance>/bwrapinfo.json`
    /// (bwrap's `--info-fd` output: `{"child-pid": N}`).
    private static func checkInstance(_ instance: String, runtimeDirectory: String?) throws(IdentityError) {
        guard let runtimeDirectory, !runtimeDirectory.isEmpty else {
            throw .untrustedSandbox("no runtime folder to find Flatpak instance \(instance) in")
        }
        let path = "\(runtimeDirectory)/.flatpak/\(instance)/bwrapinfo.json"
        let opened = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard opened >= 0 else { throw .untrustedSandbox("Flatpak instance \(instance) is not registered") }
        let descriptor = FileDescriptor(rawValue: opened)
        defer { try? descriptor.close() }
        var status = stat()
        guard fstat(descriptor.rawValue, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_uid == getuid() else {
            throw .untrustedSandbox("Flatpak instance \(instance)'s record is not the user's regular file")
        }
        let (bytes, truncated) = try ProcessPin.read(descriptor, limit: maximumInstanceInfo)
        guard !truncated, let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
              let childPID = (object["child-pid"] as? NSNumber)?.int32Value, childPID > 0 else {
            throw .untrustedSandbox("Flatpak instance \(instance)'s record names no process")
        }
        guard kill(childPID, 0) == 0 || Errno.current == .notPermitted else {
            throw .untrustedSandbox("Flatpak instance \(instance) is no longer running")
        }
    }
}
