import Foundation
import KeywellDBus
import KeywellSystem

/// The processes `keywell-bench daemon` runs: a private dbus-daemon and keywelld, in a scratch home.
final class DaemonBenchmarkWorld {
    let root: String
    let home: String
    let runtime: String
    let environment: [String: String]
    let busAddress: String
    private let busPID: pid_t

    init() throws {
        root = try PrivateBusConfiguration.makeScratchFolder(prefix: "kwbench")
        home = root + "/home"
        runtime = root + "/run"
        for folder in [home, runtime] { mkdir(folder, 0o700) }
        let listen = "unix:path=\(runtime)/bus"
        // Room for the million-element and 1,000-item messages and for 8 clients' calls in flight.
        try PrivateBusConfiguration.write(
            to: root + "/bus.conf", listen: listen,
            limits: ["max_incoming_bytes": 1_000_000_000, "max_outgoing_bytes": 1_000_000_000,
                     "max_message_size": 134_217_728, "max_replies_per_connection": 50000])
        environment = [
            "HOME": home, "XDG_RUNTIME_DIR": runtime, "XDG_DATA_HOME": home + "/.local/share",
            "XDG_CONFIG_HOME": home + "/.config", "DBUS_SESSION_BUS_ADDRESS": listen, "PATH": "/usr/bin:/bin",
            // The per-call costs are measured, not Argon2id: creating and unlocking stay cheap.
            "KEYWELL_TEST_FAST_KDF": "1",
        ]
        let spawned = try Spawn.start("/usr/bin/dbus-daemon",
                                      ["--config-file=\(root)/bus.conf", "--nofork", "--nopidfile", "--print-address=1"],
                                      environment: environment, captureOutput: true)
        busPID = spawned.pid
        busAddress = try Spawn.readLine(spawned.output!)
    }

    deinit {
        kill(busPID, SIGTERM)
        var status: Int32 = 0
        waitpid(busPID, &status, 0)
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Starts keywelld and returns its pid at once; its stderr goes to `log` (verbose) or /dev/null.
    func startDaemon(_ path: String, log: String? = nil) throws -> pid_t {
        try Spawn.start(path, log == nil ? [] : ["--verbose"], environment: environment, captureOutput: false, standardError: log).pid
    }

    /// SIGTERM, then waits for the exit.
    func stopDaemon(_ pid: pid_t) {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    func connect() throws -> DBusConnection { try DBusConnection(address: busAddress) }
}

/// Starts bench processes with an explicit environment, stdin on /dev/null and stderr on
/// /dev/null or a file.
enum Spawn {
    struct Started {
        var pid: pid_t
        /// stdout's read end when captured.
        var output: FileDescriptor?
    }

    static func start(_ path: String, _ arguments: [String], environment: [String: String], captureOutput: Bool,
                      standardError: String? = nil) throws -> Started {
        let child = try ChildSpawner.spawn(SpawnRequest(
            executable: path, arguments: arguments, environment: environment,
            standardOutput: captureOutput ? .pipe : .nullDevice,
            standardError: standardError.map { .appendToFile($0) } ?? .nullDevice))
        return Started(pid: child.pid, output: child.standardOutput)
    }

    static func readLine(_ fd: FileDescriptor) throws -> String {
        var line: [UInt8] = []
        while let byte = try fd.read(exactly: 1)?.first, byte != UInt8(ascii: "\n") { line.append(byte) }
        guard !line.isEmpty else { throw BenchmarkFailure("dbus-daemon printed no address") }
        return String(decoding: line, as: UTF8.self)
    }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// VmRSS (or another /proc/<pid>/status size field) of a process, in KiB.
func residentKiB(of pid: pid_t, field: String = "VmRSS:") -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }) else { return 0 }
    return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
}

/// CPU time all of a process's threads have run so far (the scheduler's own count, in ns,
/// from /proc/PID/task/*/schedstat), or nil when it cannot be read.
func cpuNanoseconds(of pid: pid_t) -> UInt64? {
    guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
    var total: UInt64 = 0
    for thread in threads {
        // Threads may end between the listing and the read; their time is gone with them.
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/schedstat", encoding: .utf8),
              let first = text.split(separator: " ").first, let runtime = UInt64(first) else { continue }
        total += runtime
    }
    return total
}

/// The process's CPU time per call over `calls` runs of `body`; nil when it cannot be read, or when
/// the total went down (a thread that ended meanwhile took its time along).
func cpuTimePerCall(of pid: pid_t?, calls: Int, _ body: (Int) throws -> Void) rethrows -> Duration? {
    let before = pid.flatMap(cpuNanoseconds(of:))
    for n in 0..<calls { try body(n) }
    guard let pid, let before, let after = cpuNanoseconds(of: pid), after >= before, calls > 0 else { return nil }
    return .nanoseconds(Int64(after - before) / Int64(calls))
}
