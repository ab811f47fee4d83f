import Foundation

/// Waits for a session bus socket to appear (the PAM module starts the daemon at the first login,
/// before any session bus exists). inotify on the socket's folder wakes it the moment the file
/// is created; a slow timeout covers addresses without a file and folders that do not exist yet.
final class BusSocketWatcher {
    private let socketPath: String?
    private var inotify: Int32 = -1
    private var watching = false

    init(address: String) {
        socketPath = Self.socketPath(in: address)
        inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
    }

    deinit { if inotify >= 0 { close(inotify) } }

    /// Returns after something happened to the socket's folder (true), or after `timeout`.
    @discardableResult
    func wait(timeout: Duration) -> Bool {
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        if !watching, inotify >= 0, let socketPath {
            let folder = (socketPath as NSString).deletingLastPathComponent
            let mask = UInt32(IN_CREATE) | UInt32(IN_MOVED_TO) | UInt32(IN_ATTRIB)
            watching = inotify_add_watch(inotify, folder, mask) >= 0
        }
        guard watching else {
            poll(nil, 0, milliseconds)
            return false
        }
        var descriptor = pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, milliseconds) > 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        while read(inotify, &buffer, buffer.count) > 0 {}
        return ready
    }

    /// The file of the first `unix:path=…` in a D-Bus address, unescaped.
    static func socketPath(in address: String) -> String? {
        for candidate in address.split(separator: ";") where candidate.hasPrefix("unix:") {
            for pair in candidate.dropFirst(5).split(separator: ",") where pair.hasPrefix("path=") {
                return String(pair.dropFirst(5)).removingPercentEncoding
            }
        }
        return nil
    }
}
