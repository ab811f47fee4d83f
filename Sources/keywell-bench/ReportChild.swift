import Foundation

/// Runs a helper program of the report to its end, its standard output sent to our standard
/// error (stdout carries only the table). posix_spawn and a blocking waitpid rather than
/// Foundation's Process, whose waitUntilExit was seen to miss the exit of a long fuzz.sh run.
enum ReportChild {
    /// The exit status (128 + signal when killed by one).
    @discardableResult
    static func run(_ path: String, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, 2, 1)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard spawned == 0 else { throw BenchmarkFailure("cannot start \(path): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw BenchmarkFailure("waitpid \(path): \(String(cString: strerror(errno)))") }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}
