#if canImport(Glibc)
import Glibc
#endif

/// inotify, for the watchers of files and folders (the engine's path checks, the sync folder,
/// the session bus socket): one descriptor, its watches, and its events read with `read(into:)`.
extension FileDescriptor {
    /// A new inotify instance, closed on exec and non-blocking (a read with nothing queued
    /// throws `.wouldBlock`); the caller's to close.
    public static func inotify() throws(Errno) -> FileDescriptor {
        let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard fd >= 0 else { throw .current }
        return FileDescriptor(rawValue: fd)
    }

    /// `inotify_add_watch(2)` on this inotify descriptor: the watch's number, which events carry.
    public func addWatch(_ path: String, mask: UInt32) throws(Errno) -> Int32 {
        let watch = inotify_add_watch(rawValue, path, mask)
        guard watch >= 0 else { throw .current }
        return watch
    }

    /// `inotify_rm_watch(2)`; a watch already gone is no error worth a word.
    public func removeWatch(_ watch: Int32) {
        _ = inotify_rm_watch(rawValue, watch)
    }
}
