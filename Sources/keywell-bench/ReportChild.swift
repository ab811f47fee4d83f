import Foundation
import KeywellSystem

/// Runs a helper program of the report to its end, its standard output sent to our standard
/// error (stdout carries only the table). A blocking waitpid rather than Foundation's Process,
/// whose waitUntilExit was seen to miss the exit of a long fuzz.sh run.
enum ReportChild {
    /// The exit status (128 + signal when killed by one).
    @discardableResult
    static func run(_ path: String, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Int32 {
        let child = try ChildSpawner.spawn(SpawnRequest(
            executable: path, arguments: arguments, environment: environment,
            standardOutput: .descriptor(2), standardError: .inherit))
        guard let exit = ChildSpawner.waitForExit(child.pid) else {
            throw BenchmarkFailure("waitpid \(path): \(Errno.current.description)")
        }
        return exit.shellStatus
    }
}
