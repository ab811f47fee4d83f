import Foundation
import KeywellSystem

/// Waits for a session bus socket to appear (the PAM module starts the daemon at the first login,
/// before any session bus exists). inotify on the socket's folder wakes it the moment the file
/// is created; a slow timeout covers addresses without a file and folders that do not exist yet.
final class BusSocketWatcher {
    private let socketPath: String?
    private let inotify: FileDescriptor?
    private var watching = false

    init(address: String) {
        socketPath = Self.socketPath(in: address)
        inotify = try? FileDescriptor.inotify()
    }

    deinit { try? inotify?.close() }

    /// Returns after something happened to the socket's folder (true), or after `timeout`.
    @discardableResult
    func wait(timeout: Duration) -> Bool {
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        if !watching, let inotify, let socketPath {
            let folder = (socketPath as NSString).deletingLastPathComponent
            let mask = UInt32(IN_CREATE) | UInt32(IN_MOVED_TO) | UInt32(IN_ATTRIB)
            watching = (try? inotify.addWatch(folder, mask: mask)) != nil
        }
        guard watching, let inotify else {
            poll(nil, 0, milliseconds)
            return false
        }
        let ready = (try? inotify.wait(for: POLLIN, milliseconds: milliseconds)) ?? 0 > 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        // Empties the queue; the descriptor does not block, so the end is `.wouldBlock`.
        while buffer.withUnsafeMutableBytes({ (try? inotify.read(into: $0)) ?? 0 }) > 0 {}
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
