import Foundation
import KeywellSystem
import Logging
import Synchronization

/// Says when files arrive in, or leave, a sync folder (inotify): a sync engine writes a file
/// under a temporary name and renames it into place, or writes it whole. One thread per watched
/// folder, which polls its stop flag every second.
final class FolderWatch: Sendable {
    private let descriptor: Int32
    private let stopped = StopFlag()

    private final class StopFlag: Sendable {
        let value = Atomic<Bool>(false)
    }

    /// nil when inotify cannot watch `path` (the caller then merges at unlock and after changes only).
    init?(path: String, logger: Logger, onChange: @escaping @Sendable () -> Void) {
        descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else {
            logger.warning("sync: no inotify for \(path): \(Errno.current.description)")
            return nil
        }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE)
        guard inotify_add_watch(descriptor, path, mask) >= 0 else {
            logger.warning("sync: cannot watch \(path): \(Errno.current.description)")
            close(descriptor)
            return nil
        }
        let fd = descriptor
        startDetachedThread(name: "sync-watch", stackSize: 128 << 10) { [stopped] in
            var buffer = [UInt8](repeating: 0, count: 16 << 10)
            while !stopped.value.load(ordering: .acquiring) {
                var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&waiting, 1, 1000) > 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count > 0 { onChange() }
            }
            close(fd)
        }
    }

    func stop() {
        stopped.value.store(true, ordering: .releasing)
    }
}
