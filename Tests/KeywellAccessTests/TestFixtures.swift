import Foundation
import Logging

/// Log lines a gate writes, kept for a test to read.
final class CollectedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }

    func logger() -> Logger {
        Logger(label: "test.access") { _ in Handler(lines: self) }
    }

    private struct Handler: LogHandler {
        let lines: CollectedLines
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { lines.append("\(event.message)") }
    }
}

/// A data home with an `applications` folder and a program for its entries to run.
struct DesktopFixture {
    let dataHome: String
    let program: String

    init() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("keywell-desktop-\(UUID().uuidString)").path
        dataHome = root + "/share"
        try FileManager.default.createDirectory(atPath: dataHome + "/applications", withIntermediateDirectories: true)
        program = root + "/bin/mail-client"
        try FileManager.default.createDirectory(atPath: root + "/bin", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: program, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
    }

    func entry(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: dataHome + "/applications/" + name))
    }
}
