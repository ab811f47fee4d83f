import Foundation
import Logging
import Synchronization

/// One line per message on stderr (`keywelld[pid] level: message key=value`): what journald
/// and a terminal want. Callers never pass secrets; nothing here could tell one from a name.
struct StderrLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    private let prefix: String
    private static let writing = Mutex(())

    init(label: String, level: Logger.Level) {
        self.logLevel = level
        self.prefix = "keywelld[\(getpid())]"
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var line = "\(prefix) \(event.level): \(event.message)"
        let all = event.metadata.map { metadata.merging($0) { $1 } } ?? metadata
        for key in all.keys.sorted() { line += " \(key)=\(all[key]!)" }
        line += "\n"
        let bytes = Array(line.utf8)
        // One write per line, so lines from several threads never interleave.
        Self.writing.withLock { _ in _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) } }
    }
}
