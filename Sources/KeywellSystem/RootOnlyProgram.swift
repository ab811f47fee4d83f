#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether a program is one only root can replace (docs/access-control.md, "Programs only root
/// can replace"): such a program is named by its path alone, so that root's updates keep its name.
package enum RootOnlyProgram {
    /// Whether the regular file open at `descriptor`, which the kernel reports at `path`, is
    /// root-only: the open file is owned by uid 0 and writable by neither group nor others;
    /// `path`, in this process's view of the file system, is that same file (device and inode);
    /// and every folder above `path`, up to `/`, is a real folder owned by uid 0 and writable by
    /// neither group nor others (so a sticky `/tmp` fails).
    ///
    /// No race: the verdict on ownership and mode is about the open file, which nobody but root
    /// can chown or chmod; once every folder on the way is root's alone, only root can make
    /// `path` name another file.
    package static func isRootOnly(_ descriptor: FileDescriptor, path: String) -> Bool {
        var opened = stat()
        guard fstat(descriptor.rawValue, &opened) == 0, isRootsAlone(opened, kind: S_IFREG) else { return false }
        guard let folders = folders(above: path) else { return false }
        // lstat: the kernel's path and realpath's hold no symbolic link, so one at the end is not
        // the program.
        var named = stat()
        guard lstat(path, &named) == 0, named.st_dev == opened.st_dev, named.st_ino == opened.st_ino else { return false }
        return folders.allSatisfy { folder in
            var status = stat()
            return lstat(folder, &status) == 0 && isRootsAlone(status, kind: S_IFDIR)
        }
    }

    /// Of type `kind`, owned by root, and without the group- or other-write bit. An ACL that lets
    /// another user write shows as the group-write bit (the mask), so it fails too.
    private static func isRootsAlone(_ status: stat, kind: mode_t) -> Bool {
        status.st_mode & S_IFMT == kind && status.st_uid == 0 && status.st_mode & (S_IWGRP | S_IWOTH) == 0
    }

    /// The folders above an absolute, plain path (`/usr/bin/env`: `/usr/bin`, `/usr`, `/`); nil
    /// for a path that is relative or has an empty, `.` or `..` part, which would not name the
    /// folders it spells.
    static func folders(above path: String) -> [String]? {
        guard path.hasPrefix("/") else { return nil }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard !parts.isEmpty, !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else { return nil }
        var folders = ["/"]
        var current = ""
        for part in parts.dropLast() {
            current += "/" + part
            folders.append(current)
        }
        return folders
    }
}
