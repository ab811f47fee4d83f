import Foundation
import KeywellSystem

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
    private var backgroundOutputs: [FileDescriptor] = []

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
        // Its address line: the bus listens once it is written.
        var byte: UInt8 = 0
        while (try? withUnsafeMutableBytes(of: &byte) { buffer throws(Errno) in try bus.output.read(filling: buffer) }) == true,
              byte != UInt8(ascii: "\n") {}
        try? bus.output.close()
    }

    /// Runs a program to its end; the time covers spawn to exit with all output read.
    /// `environment` replaces the world's for this run.
    func run(_ command: [String], input: String? = nil, environment: [String: String]? = nil) throws -> Run {
        try Self.run(command, input: input, environment: environment ?? self.environment)
    }

    /// Runs a program to its end in `environment` (used by other worlds too: `questions`).
    static func run(_ command: [String], input: String? = nil, environment: [String: String]) throws -> Run {
        let clock = ContinuousClock()
        let start = clock.now
        let child = try Self.spawn(command[0], Array(command.dropFirst()), environment: environment,
                                   input: input, newGroup: false)
        let output = ChildSpawner.readToEnd(child.output)
        try? child.output.close()
        let exit = ChildSpawner.waitForExit(child.pid)
        let duration = clock.now - start
        return Run(status: exit?.shellStatus ?? -1, output: String(decoding: output, as: UTF8.self), duration: duration)
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
        backgroundOutputs.forEach { try? $0.close() }
        try? FileManager.default.removeItem(atPath: root)
    }

    private static func spawn(_ path: String, _ arguments: [String], environment: [String: String], input: String?,
                              newGroup: Bool) throws -> (pid: pid_t, output: FileDescriptor) {
        let child = try ChildSpawner.spawn(SpawnRequest(
            executable: path, arguments: arguments, environment: environment, standardInput: input == nil ? .nullDevice : .pipe,
            standardOutput: .pipe, newProcessGroup: newGroup))
        if let input, let inputEnd = child.standardInput {
            inputEnd.closeAfter { try? inputEnd.writeAll(Array(input.utf8)) }
        }
        return (child.pid, child.standardOutput!)
    }
}

extension CLIBenchWorld {
    /// A folder on PATH holding `keywell` and `git-credential-keywell` as an install lays them
    /// out: keywell copied in (as install(1) does), and the helper the file shipped beside that
    /// keywell when there is one (an older build's script), else a link to the copy (which
    /// dispatches on its name). A copy, not a link to the build folder: the linker's own output
    /// file started 0.8 ms (of 6) slower than a byte-identical copy of it, run after run (the
    /// way its pages sit in the page cache, it seems), which would weigh on one build only.
    func helperFolder(_ name: String, keywell: String)
        throws -> (keywell: String, helper: String, environment: [String: String]) {
        let bin = root + "/" + name
        mkdir(bin, 0o700)
        let shipped = URL(fileURLWithPath: keywell).deletingLastPathComponent().appendingPathComponent("git-credential-keywell").path
        let helper = FileManager.default.isExecutableFile(atPath: shipped) ? shipped : bin + "/keywell"
        do {
            try FileManager.default.copyItem(atPath: URL(fileURLWithPath: keywell).resolvingSymlinksInPath().path, toPath: bin + "/keywell")
        } catch {
            throw BenchmarkFailure("cannot copy \(keywell) into \(bin): \(error)")
        }
        guard symlink(helper, bin + "/git-credential-keywell") == 0 else {
            throw BenchmarkFailure("cannot link the helper into \(bin)")
        }
        var environment = self.environment
        environment["PATH"] = bin + ":/usr/bin:/bin"
        return (bin + "/keywell", bin + "/git-credential-keywell", environment)
    }
}
