import Foundation
import KeywellAccess
import KeywellProtocol
import KeywellSystem

/// The grants *Always Allow* made, so that `keywell doctor` can list them (docs/access-control.md,
/// "keywell doctor"): an item's list says which programs it trusts, not how each got there. One
/// JSON line per item granted, `$XDG_STATE_HOME/keywell/always-allow.jsonl` (folder 0700, file
/// 0600): when, which identity, the keychain's path, the item's label and reference (no secret).
/// Past `maxBytes` the oldest half is dropped. A line that does not parse is skipped.
final class AlwaysAllowRecord: Sendable {
    static let fileName = "always-allow.jsonl"
    /// Thousands of grants: a person answers Always Allow a few times a month.
    static let maxBytes = 256 * 1024
    /// Items written per answer: an answer about more is recorded by its first ones.
    static let maxItemsPerAnswer = 64

    struct Grant: Codable, Equatable {
        var time: Int64
        var identity: String
        var keychain: String
        var label: String
        /// The item's `v_PersistentRef` bytes, hex.
        var reference: String
    }

    private let path: String?
    private let lock = Protected(())

    /// `path` nil: nothing is recorded (no state folder could be named).
    init(path: String?) { self.path = path }

    /// The file in keywelld's state folder, the one its log file uses.
    convenience init(environment: [String: String]) {
        self.init(path: DaemonLogFile.stateFolder(environment).map { $0 + "/" + Self.fileName })
    }

    /// Appends one line per item of an Always Allow just written into the keychain files.
    func record(identity: String, items: [AccessItem], now: Date = Date()) throws {
        guard let path else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var lines = Data()
        for item in items.prefix(Self.maxItemsPerAnswer) {
            let grant = Grant(time: Int64(now.timeIntervalSince1970), identity: identity, keychain: item.keychain,
                              label: item.label, reference: LowercaseHex.string(item.reference))
            lines.append(try encoder.encode(grant))
            lines.append(0x0A)
        }
        try lock.withLock { _ in
            var kept = (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
            if kept.count + lines.count > Self.maxBytes {
                // The newest lines that fit in half the cap, from a line's start.
                let tail = kept.suffix(Self.maxBytes / 2)
                kept = tail.firstIndex(of: 0x0A).map { Data(tail[tail.index(after: $0)...]) } ?? Data()
            }
            try write(kept + lines, to: path)
        }
    }

    /// The recorded grants, newest first, at most `limit`.
    func grants(limit: Int = AccessGrantKey.maximumReported) -> [Grant] {
        guard let path, let data = lock.withLock({ _ in try? Data(contentsOf: URL(fileURLWithPath: path)) }) else { return [] }
        let decoder = JSONDecoder()
        var result: [Grant] = []
        for line in data.split(separator: 0x0A).reversed() {
            guard result.count < limit else { break }
            if let grant = try? decoder.decode(Grant.self, from: Data(line)) { result.append(grant) }
        }
        return result
    }

    /// The whole file replaced at once (a new file renamed over it), 0600, never through a link.
    private func write(_ data: Data, to path: String) throws {
        let temporary = path + ".new"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw CocoaError(.fileWriteNoPermission) }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        try handle.write(contentsOf: data)
        try handle.synchronize()
        try handle.close()
        guard rename(temporary, path) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }
}
