import Foundation
import KeywellDBus
import KeywellSystem

/// Who is calling, for the log: the sender's pid (asked of the bus, or of the socket for a
/// direct-socket caller) and its executable, cached
/// per sender. Only computed when a log line needs it, so the hot path never pays the extra
/// round trip to the bus.
final class CallerIdentity: Sendable {
    /// Unique names are never reused on a bus, so entries only go stale; a bound keeps the
    /// cache small without watching NameOwnerChanged.
    private let capacity = 256
    private let cache = Protected<[String: String]>([:])

    /// True when `describe` would answer from the cache, without a call to the bus.
    func isKnown(_ sender: String) -> Bool {
        sender.isEmpty || cache.withLock { $0[sender] != nil }
    }

    func describe(_ sender: String, on connection: DBusConnection) -> String {
        guard !sender.isEmpty else { return "a peer" }
        if let known = cache.withLock({ $0[sender] }) { return known }
        let description = Self.lookUp(sender, on: connection)
        cache.withLock { cache in
            if cache.count >= capacity { cache.removeAll(keepingCapacity: true) }
            cache[sender] = description
        }
        return description
    }

    private static func lookUp(_ sender: String, on connection: DBusConnection) -> String {
        if connection.peerName != nil {
            guard let peer = connection.peerCredentials(pinning: false) else { return sender }
            return "\(executable(of: peer.pid) ?? "?") (pid \(peer.pid), \(sender) on the direct socket)"
        }
        guard let pid = try? connection.unixProcessID(of: sender) else { return sender }
        return "\(executable(of: pid_t(bitPattern: pid)) ?? "?") (pid \(pid), \(sender))"
    }

    /// `/proc/<pid>/exe`; nil when the process is gone or not ours to look at.
    static func executable(of pid: pid_t) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
