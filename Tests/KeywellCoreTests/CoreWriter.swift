import Foundation
import KeywellTestSupport

/// `keywell-bench core-writer`: the engine in a process of its own, adding items one at a time
/// and printing `ack N` for each acknowledged add (Sources/keywell-bench/CoreWriterHelper.swift).
enum CoreWriter {
    /// keywell-bench is built next to the test binary (`swift build` / `swift test` build all products).
    static func executable() throws -> String {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let candidate = testBinary.deletingLastPathComponent().appendingPathComponent("keywell-bench").path
        guard FileManager.default.isExecutableFile(atPath: candidate) else {
            throw TestFailure("keywell-bench is not built next to the tests (\(candidate)); run swift build first")
        }
        return candidate
    }

    /// The arguments that point it at `environment`'s keychain `keychain`.
    static func arguments(_ environment: TestEnvironment, keychain: String, prefix: String, count: Int) -> [String] {
        [
            "core-writer", "--keychains-directory", environment.keychainsDirectory,
            "--config-directory", environment.paths.configDirectory.path,
            "--keychain", keychain, "--prefix", prefix, "--count", "\(count)",
        ]
    }

    /// The indices of the `ack N` lines in `output`.
    static func acknowledged(_ output: Data) -> [Int] {
        String(decoding: output, as: UTF8.self).split(separator: "\n").compactMap { line in
            line.hasPrefix("ack ") ? Int(line.dropFirst(4)) : nil
        }
    }

    /// Starts it with password "pw" on its standard input.
    static func start(_ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(executable: try executable(), arguments: arguments, standardInput: Array("pw\n".utf8))
    }

    /// Runs it to the end with password "pw": its stdout and how it ended.
    static func run(_ arguments: [String]) throws -> (output: Data, termination: ChildProcess.Termination) {
        let finished = try start(arguments).wait(timeout: .seconds(600))
        return (Data(finished.standardOutput), finished.termination)
    }
}
