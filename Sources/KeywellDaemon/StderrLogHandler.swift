import Foundation
import Logging
import Synchronization

/// One line per message on stderr (`keywelld[pid] level: message key=value`): what journald
/// and a terminal want; into a file when stderr is not open (`DaemonLogFile`). Callers never
/// pass secrets; nothing here could tell one from a name.
struct StderrLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    private let prefix: String
    private let destination: DaemonLogFile

    init(label: String, level: Logger.Level, destination: DaemonLogFile) {
        self.logLevel = level
        self.prefix = "keywelld[\(getpid())]"
        self.destination = destination
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
        destination.write(Array(line.utf8))
    }
}
