import Foundation

/// One private session bus with scratch XDG folders for `keywell-bench cli`, and timed runs of
/// programs on it. Everything it starts is in the bus's process group, ended by `stop()`.
final class CLIBenchWorld {
    struct Run: CustomStringConvertible {
        let status: Int32
        let output: String
        let duration: Duration
        var description: String { "exit \(status), output \(output.debugDescription)" }
    }

    let root: String
    let environment: [String: String]
    private let busPID: pid_t
    private var backgroundPIDs: [pid_t] = []
    /// Their stdout, kept open until the end: a daemon writing there must not get SIGPIPE.
    private var backgroundOutputs: [Int32] = []

    /// `activating`: bus name → program the bus starts on the first call (D-Bus activation).
    /// `extraEnvironment` is added to (or replaces) the world's variables.
    init(name: String, activating services: [String: String], extraEnvironment: [String: String] = [:]) throws {
        root = try PrivateBusConfiguration.makeScratchFolder(prefix: "kwclibench-\(name)")
        for folder in ["home", "run", "services"] { mkdir(root + "/" + folder, 0o700) }
        for (busName, program) in services {
            try "[D-BUS Service]\nName=\(busName)\nExec=\(program)\n"
                .write(toFile: "\(root)/services/\(busName).service", atomically: true, encoding: .utf8)
        }
        let listen = "unix:path=\(root)/run/bus"
        try PrivateBusConfiguration.write(
            to: root + "/bus.conf", listen: listen, serviceDirectory: root + "/services", allowAnyUser: true)
        let home = root + "/home"
        environment = [
            "HOME": home, "XDG_RUNTIME_DIR": root + "/run", "XDG_DATA_HOME": home + "/.local/share",
            "XDG_CONFIG_HOME": home + "/.config", "XDG_CACHE_HOME": home + "/.cache",
            "DBUS_SESSION_BUS_ADDRESS": listen, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
        ].merging(extraEnvironment) { $1 }
        let bus = try Self.spawn("/usr/bin/dbus-daemon", ["--config-file=\(root)/bus.conf", "--nofork", "--nopidfile", "--print-address=1"],
                                 environment: environment, input: nil, newGroup: true)
        busPID = bus.pid
        var byte: UInt8 = 0
        while read(bus.output, &byte, 1) == 1, byte != UInt8(ascii: "\n") {}
        close(bus.output)
    }

    /// Runs a program to its end; the time covers spawn to exit with all output read.
    /// `environment` replaces the world's for this run.
    func run(_ command: [String], input: String? = nil, environment: [String: String]? = nil) throws -> Run {
        let clock = ContinuousClock()
        let start = clock.now
        let child = try Self.spawn(command[0], Array(command.dropFirst()), environment: environment ?? self.environment,
                                   input: input, newGroup: false)
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(child.output, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            output += buffer[0..<count]
        }
        close(child.output)
        var status: Int32 = 0
        while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
        let duration = clock.now - start
        let exitStatus = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Run(status: exitStatus, output: String(decoding: output, as: UTF8.self), duration: duration)
    }

    func check(_ program: String, _ arguments: [String], input: String? = nil, environment: [String: String]? = nil) throws {
        let result = try run([program] + arguments, input: input, environment: environment)
        guard result.status == 0 else { throw BenchmarkFailure("\(program) \(arguments.joined(separator: " ")): \(result)") }
    }

    /// A long-running program (a daemon in the foreground), ended by `stop()`; returns its pid.
    @discardableResult
    func startBackground(_ program: String, _ arguments: [String], input: String?) throws -> pid_t {
        let child = try Self.spawn(program, arguments, environment: environment, input: input, newGroup: false)
        backgroundOutputs.append(child.output)
        backgroundPIDs.append(child.pid)
        return child.pid
    }

    /// Waits (up to 10 s) until `name` has an owner on the bus.
    func waitForName(_ name: String) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let result = try run(["/usr/bin/dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus",
                                  "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", "string:\(name)"])
            if result.output.contains("boolean true") { return }
            usleep(50_000)
        }
        throw BenchmarkFailure("\(name) never appeared on the bus")
    }

    func stop() {
        for pid in backgroundPIDs { kill(pid, SIGTERM) }
        // The bus and the daemons it activated share its process group.
        kill(-busPID, SIGTERM)
        var status: Int32 = 0
        for pid in backgroundPIDs + [busPID] { waitpid(pid, &status, 0) }
        backgroundOutputs.forEach { close($0) }
        try? FileManager.default.removeItem(atPath: root)
    }

    private static func spawn(_ path: String, _ arguments: [String], environment: [String: String], input: String?,
                              newGroup: Bool) throws -> (pid: pid_t, output: Int32) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var outputPipe: [Int32] = [-1, -1], inputPipe: [Int32] = [-1, -1]
        guard pipe(&outputPipe) == 0 else { throw BenchmarkFailure("pipe failed") }
        if input != nil {
            guard pipe(&inputPipe) == 0 else { throw BenchmarkFailure("pipe failed") }
            posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
            posix_spawn_file_actions_addclose(&actions, inputPipe[1])
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
        posix_spawn_file_actions_addclose(&actions, outputPipe[0])
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if newGroup {
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        close(outputPipe[1])
        if input != nil { close(inputPipe[0]) }
        guard status == 0 else {
            close(outputPipe[0])
            if input != nil { close(inputPipe[1]) }
            throw BenchmarkFailure("cannot start \(path): \(String(cString: strerror(status)))")
        }
        if let input {
            let bytes = Array(input.utf8)
            _ = bytes.withUnsafeBytes { write(inputPipe[1], $0.baseAddress, $0.count) }
            close(inputPipe[1])
        }
        return (pid, outputPipe[0])
    }
}
