import ArgumentParser
import CKeywellControl
import Foundation
import KeywellProtocol
import KeywellSystem

/// `keywell-bench memory-workload`: keywelld's memory and git's lookup measured from outside,
/// through a login and a real application rather than the bench's own client
/// (docs/performance.md, "A login's workload").
///
/// On a private session bus: keywelld started as pam_keywell starts it (no arguments), the login
/// keychain made and unlocked through the control socket as pam_keywell hands the password over
/// (real Argon2id), 1,000 items added through the Secret Service by python3-secretstorage (a
/// python program's keyring), `git credential fill` through git-credential-keywell by full path
/// alternated with a `dbus-send` Ping, then the login closed (which locks `login`). keywelld's
/// RSS is read one second after the items and when idle at start and after the lock.
struct MemoryWorkloadBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "memory-workload",
        abstract: "keywelld's memory after a login and 1,000 Secret Service items from python, and git's helper against Ping, with the targets."
    )

    @Option(help: "The keywell to measure (default: the one next to this program).")
    var keywell: String?

    @Option(help: "The keywelld it talks to (default: the one next to this program).")
    var keywelld: String?

    @Option(help: "Items the python client adds.")
    var items = 1000

    @Option(help: "Alternated rounds of git credential fill and Ping.")
    var rounds = 20

    @Option(help: "Seconds to wait for the idle readings (keywelld trims after 10 s without a call).")
    var idleWait = 12

    @Flag(help: "Only git's helper against Ping, after the login unlock: no items, no memory readings (a quicker run, e.g. with more --rounds).")
    var gitOnly = false

    private static let password = "login-password"
    private static let python = "/usr/bin/python3"

    func run() throws {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
        let keywellPath = keywell ?? folder + "/keywell"
        let daemonPath = keywelld ?? folder + "/keywelld"
        for path in [keywellPath, daemonPath, Self.python, "/usr/bin/dbus-daemon", "/usr/bin/dbus-send", "/usr/bin/git"]
        where !FileManager.default.isExecutableFile(atPath: path) {
            throw ValidationError("\(path) is missing (keywell: build it; the others: scripts/setup.sh)")
        }
        let probe = try CLIBenchWorld(name: "probe", activating: [:])
        defer { probe.stop() }
        guard try probe.run([Self.python, "-c", "import secretstorage"]).status == 0 else {
            throw ValidationError("python3-secretstorage is missing (scripts/setup.sh installs it)")
        }
        print("memory workload on \(ProcessInfo.processInfo.activeProcessorCount) cores; private session bus, real Argon2id")
        print("keywell: \(keywellPath)\nkeywelld: \(daemonPath)")

        let world = try CLIBenchWorld(
            name: "workload", activating: [:],
            extraEnvironment: ["GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0"])
        defer { world.stop() }
        // As pam_keywell starts it: the program alone, the session's environment.
        let pid = try world.startBackground(daemonPath, [], input: nil)
        try world.waitForName(KeywellNames.secretsBusName)
        let control = LoginControl(path: world.environment["XDG_RUNTIME_DIR"]! + "/\(KW_CONTROL_FOLDER)/\(KW_CONTROL_SOCKET)")

        var readings: [(step: String, memory: ProcessMemory)] = []
        func read(_ step: String, wait: Int) -> ProcessMemory {
            sleep(UInt32(wait))
            let memory = ProcessMemory(pid: pid)
            readings.append((step, memory))
            return memory
        }
        // --git-only prints no memory reading: no wait for the idle one.
        let start = read("start, idle (\(idleWait) s)", wait: gitOnly ? 0 : idleWait)
        let startMappings = residentByMapping(pid, byPermissions: true)
        let startThreads = threadNames(pid)

        // First login: `login` made with the password; then a logout locks it and a second login
        // unlocks it, each as pam_keywell's open and close session do.
        try control.send(.openSession, password: Self.password)
        try control.send(.closeSession)
        try control.send(.openSession, password: Self.password)
        if gitOnly {
            let git = try GitAgainstPing(world: world, keywell: keywellPath, rounds: rounds).run()
            let verdict = TargetVerdict.ratio("git credential fill through the helper (full path) / Ping", git, atMost: 2.5)
            print("\ntarget (issue 32):\n\(verdict.line)")
            if !verdict.met { throw ExitCode(1) }
            return
        }
        _ = read("after login unlock (1 s after)", wait: 1)

        let script = world.root + "/add-items.py"
        try Self.addItemsScript.write(toFile: script, atomically: true, encoding: .utf8)
        let added = try world.run([Self.python, script, String(items)])
        guard added.status == 0, added.output == "added \(items)\n" else {
            throw BenchmarkFailure("the python client: \(added)")
        }
        let inUse = read("\(items) items from python (1 s after)", wait: 1)
        let inUseMappings = residentByMapping(pid)
        print(String(format: "python3-secretstorage added %d items in %.2f s (one CreateItem each, whole program)",
                     items, added.duration.seconds))

        let git = try GitAgainstPing(world: world, keywell: keywellPath, rounds: rounds).run()
        _ = read("after git credential rounds (1 s after)", wait: 1)
        _ = read("\(items) items, idle (\(idleWait) s)", wait: idleWait - 1)

        try control.send(.closeSession)
        let locked = read("after logout (login locked), idle (\(idleWait) s)", wait: idleWait)
        let lockedMappings = residentByMapping(pid, byPermissions: true)
        let lockedThreads = threadNames(pid)

        print("\nkeywelld resident memory, MiB (RSS / PSS from /proc/PID/smaps_rollup; peak = VmHWM so far)")
        print("step".padding(toLength: 52, withPad: " ", startingAt: 0) + "RSS    PSS    peak")
        for (step, memory) in readings {
            print(step.padding(toLength: 52, withPad: " ", startingAt: 0)
                  + String(format: "%-6.1f %-6.1f %-6.1f", Double(memory.rss) / 1024, Double(memory.pss) / 1024,
                           Double(memory.peak) / 1024))
        }
        print("in use with \(items) items, resident KiB by mapping (largest first):")
        for (mapping, kib) in inUseMappings.prefix(10) { print(String(format: "  %7d  %@", kib, mapping)) }
        let grown = residentGrowth(from: startMappings, to: lockedMappings)
        print("idle after logout − idle at start, KiB by mapping and permissions (largest first):")
        for (mapping, kib) in grown.prefix(10) { print(String(format: "  %+7d  %@", kib, mapping)) }
        print("threads idle at start (\(startThreads.count)): \(startThreads.joined(separator: ", "))")
        print("threads idle after logout (\(lockedThreads.count)): \(lockedThreads.joined(separator: ", "))")

        let verdicts: [TargetVerdict] = [
            .mebibytes("keywelld RSS 1 s after \(items) Secret Service items", Double(inUse.rss) / 1024, atMost: 15),
            .mebibytes("keywelld RSS idle after logout − idle at start", Double(locked.rss - start.rss) / 1024, atMost: 1,
                       signed: true),
            .ratio("git credential fill through the helper (full path) / Ping", git, atMost: 2.5),
        ]
        print("\ntargets (issue 32):")
        for verdict in verdicts { print(verdict.line) }
        let missed = verdicts.filter { !$0.met }.count
        print(missed == 0 ? "all \(verdicts.count) targets met" : "\(missed) of \(verdicts.count) targets NOT met")
        if missed > 0 { throw ExitCode(1) }
    }

    /// What a python program storing its secrets does: python-keyring's backend, one session
    /// (DH-encrypted transfer, as secretstorage negotiates by default), the default collection,
    /// one CreateItem per secret.
    private static let addItemsScript = """
        import sys
        import secretstorage

        count = int(sys.argv[1])
        connection = secretstorage.dbus_init()
        collection = secretstorage.get_default_collection(connection)
        for index in range(count):
            collection.create_item(f"workload item {index}", {"application": "memory-workload", "index": str(index)},
                                   f"secret-{index}".encode(), replace=False)
        print(f"added {count}")

        """
}

/// The names of a process's threads (/proc/PID/task/*/comm), sorted.
private func threadNames(_ pid: pid_t) -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return tasks.compactMap { task in
        (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }.sorted()
}

/// `git credential fill` through git-credential-keywell by full path, alternated round by round
/// with `dbus-send … Peer.Ping` to keywelld; the ratio of their median wall times.
private struct GitAgainstPing {
    let world: CLIBenchWorld
    let keywell: String
    let rounds: Int

    func run() throws -> Double {
        let helpers = try world.helperFolder("bin", keywell: keywell)
        let git = ["/usr/bin/git", "-c", "credential.helper=\(helpers.helper)", "credential"]
        try world.check(git[0], Array(git.dropFirst()) + ["approve"],
                        input: "url=https://git.example.com\nusername=alice\npassword=s3cret\n\n", environment: helpers.environment)
        let ping = ["/usr/bin/dbus-send", "--session", "--print-reply", "--dest=\(KeywellNames.busName)", KeywellNames.objectPath,
                    "org.freedesktop.DBus.Peer.Ping"]
        var gitTimes = LatencySamples(), pingTimes = LatencySamples()
        for round in -3..<rounds {
            // The order alternates, so that neither always runs right after the other.
            for first in [round % 2 == 0, round % 2 != 0] {
                if first {
                    let result = try world.run(git + ["fill"], input: "url=https://git.example.com\n\n", environment: helpers.environment)
                    guard result.status == 0, result.output.contains("\npassword=s3cret\n") else {
                        throw BenchmarkFailure("git credential fill answered \(result)")
                    }
                    if round >= 0 { gitTimes.append(result.duration) }
                } else {
                    let result = try world.run(ping)
                    guard result.status == 0 else { throw BenchmarkFailure("Ping answered \(result)") }
                    if round >= 0 { pingTimes.append(result.duration) }
                }
            }
        }
        let gitMedian = gitTimes.percentile(0.5).seconds, pingMedian = pingTimes.percentile(0.5).seconds
        print(String(format: "git credential fill (helper by full path) %.2f ms, dbus-send Ping %.2f ms: medians of %d alternated rounds",
                     gitMedian * 1000, pingMedian * 1000, rounds))
        return gitMedian / pingMedian
    }
}

/// pam_keywell's side of the control socket (docs/control-protocol.md): one request per
/// connection, the answer's status checked.
private struct LoginControl {
    let path: String

    enum Operation {
        case openSession, closeSession
        var letter: UInt8 {
            switch self {
            case .openSession: UInt8(KW_OP_OPEN_SESSION)
            case .closeSession: UInt8(KW_OP_CLOSE_SESSION)
            }
        }
    }

    func send(_ operation: Operation, password: String? = nil) throws {
        let socket = try FileDescriptor.connectUnixSocket(path)
        defer { try? socket.close() }
        var request = Array(KW_CONTROL_MAGIC.utf8) + [operation.letter]
        if let password {
            let field = Array(password.utf8)
            request += [1] + withUnsafeBytes(of: UInt32(field.count).bigEndian, Array.init) + field
        } else {
            request += [0]
        }
        do { try socket.sendAll(request) } catch { throw BenchmarkFailure("cannot write to the control socket: \(error)") }
        // The daemon answers once and closes: everything up to the end is the answer.
        guard let answer = try socket.readAll(limit: Int(KW_RESPONSE_HEAD_LENGTH) + Int(KW_MAX_RESPONSE_MESSAGE)) else {
            throw BenchmarkFailure("the control socket answered more than a response holds")
        }
        let headLength = Int(KW_RESPONSE_HEAD_LENGTH)
        guard answer.count >= headLength, Array(answer[0..<4]) == Array(KW_CONTROL_MAGIC.utf8) else {
            throw BenchmarkFailure("the control socket answered \(answer.count) bytes")
        }
        let status = answer[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard status == 0 else {
            let message = String(decoding: answer[headLength...], as: UTF8.self)
            throw BenchmarkFailure("control op \(operation) answered \(Int32(bitPattern: status)): \(message)")
        }
    }
}
