import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// A scratch home with a private dbus-daemon that starts keywelld by D-Bus activation, as a
/// desktop session does: the first call to either bus name starts it, and so does the first
/// call after it died. Used by `load`, `faults` and `security-report`.
final class ActivatedDaemonWorld {
    let root: String
    let home: String
    let runtime: String
    let environment: [String: String]
    let busAddress: String
    let daemonPath: String
    private let busPID: pid_t

    /// `extraEnvironment` reaches keywelld through the bus (activated services inherit its environment).
    init(daemonPath: String, extraEnvironment: [String: String] = [:]) throws {
        self.daemonPath = daemonPath
        root = try PrivateBusConfiguration.makeScratchFolder(prefix: "kwsecurity")
        home = root + "/home"
        runtime = root + "/run"
        let services = root + "/services"
        for folder in [home, runtime, services] { mkdir(folder, 0o700) }
        for name in [KeywellNames.busName, KeywellNames.secretsBusName] {
            try "[D-BUS Service]\nName=\(name)\nExec=\(daemonPath)\n"
                .write(toFile: "\(services)/\(name).service", atomically: true, encoding: .utf8)
        }
        let listen = "unix:path=\(runtime)/bus"
        // Room for thousands of calls in flight, and for activation on a busy machine.
        try PrivateBusConfiguration.write(
            to: root + "/bus.conf", listen: listen, serviceDirectory: services,
            limits: ["max_replies_per_connection": 50000, "service_start_timeout": 20000])
        environment = [
            "HOME": home, "XDG_RUNTIME_DIR": runtime, "XDG_DATA_HOME": home + "/.local/share",
            "XDG_CONFIG_HOME": home + "/.config", "DBUS_SESSION_BUS_ADDRESS": listen, "PATH": "/usr/bin:/bin",
            // Calls are measured, not Argon2id: creating and unlocking stay cheap.
            "KEYWELL_TEST_FAST_KDF": "1",
        ].merging(extraEnvironment) { $1 }
        let spawned = try Spawn.start("/usr/bin/dbus-daemon",
                                      ["--config-file=\(root)/bus.conf", "--nofork", "--nopidfile", "--print-address=1"],
                                      environment: environment, captureOutput: true)
        busPID = spawned.pid
        busAddress = try Spawn.readLine(spawned.output!)
    }

    deinit {
        if let pid = try? daemonPID() { kill(pid_t(pid), SIGTERM) }
        kill(busPID, SIGTERM)
        var status: Int32 = 0
        waitpid(busPID, &status, 0)
        // Give an orphaned keywelld a moment to go before its files do.
        usleep(200_000)
        try? FileManager.default.removeItem(atPath: root)
    }

    func connect() throws -> DBusConnection { try DBusConnection(address: busAddress) }

    /// The running keywelld's pid, or nil when nobody owns the name.
    func daemonPID() throws -> pid_t? {
        let connection = try connect()
        defer { connection.close() }
        guard try connection.nameHasOwner(KeywellNames.busName) else { return nil }
        return pid_t(try connection.unixProcessID(of: KeywellNames.busName))
    }

    /// The keychain file of a keychain in the keychains folder.
    func keychainPath(_ name: String) -> String {
        "\(home)/.local/share/keywell/keychains/\(name).keychain-db"
    }

    /// The keychain's `PRAGMA integrity_check` through the sqlite3 CLI, read-only ("ok" when sound).
    func integrityCheck(_ name: String) -> String {
        let run: (exit: ChildExit?, output: [UInt8])
        do {
            run = try ChildSpawner.runToEnd(SpawnRequest(
                executable: "/usr/bin/sqlite3", arguments: ["-readonly", keychainPath(name), "PRAGMA integrity_check;"],
                environment: ProcessInfo.processInfo.environment, standardError: .standardOutput))
        } catch {
            return "cannot run sqlite3: \(error)"
        }
        let text = String(decoding: run.output, as: UTF8.self)
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// The keywelld next to this program unless one is named.
func locateKeywelld(_ given: String?) throws -> String {
    let path = given ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("keywelld").path
    guard FileManager.default.isExecutableFile(atPath: path) else {
        throw BenchmarkFailure("no keywelld at \(path); pass --keywelld")
    }
    return path
}
