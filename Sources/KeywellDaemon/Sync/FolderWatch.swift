import Foundation
import KeywellSystem
import Logging
import Synchronization

/// Says when files arrive in, or leave, a sync folder (inotify): a sync engine writes a file
/// under a temporary name and renames it into place, or writes it whole. One thread per watched
/// folder, which polls its stop flag every second.
final class FolderWatch: Sendable {
    private let descriptor: FileDescriptor
    private let stopped = StopFlag()

    private final class StopFlag: Sendable {
        let value = Atomic<Bool>(false)
    }

    /// nil when inotify cannot watch `path` (the caller then merges at unlock and after changes only).
    init?(path: String, logger: Logger, onChange: @escaping @Sendable () -> Void) {
        do { descriptor = try FileDescriptor.inotify() } catch {
            logger.warning("sync: no inotify for \(path): \(error.description)")
            return nil
        }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE)
        do { _ = try descriptor.addWatch(path, mask: mask) } catch {
            logger.warning("sync: cannot watch \(path): \(error.description)")
            try? descriptor.close()
            return nil
        }
        let fd = descriptor
        startDetachedThread(name: "sync-watch", stackSize: 128 << 10) { [stopped] in
            var buffer = [UInt8](repeating: 0, count: 16 << 10)
            while !stopped.value.load(ordering: .acquiring) {
                guard (try? fd.wait(for: POLLIN, milliseconds: 1000)) ?? 0 > 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { (try? fd.read(into: $0)) ?? 0 }
                if count > 0 { onChange() }
            }
            try? fd.close()
        }
    }

    func stop() {
        stopped.value.store(true, ordering: .releasing)
    }
}
