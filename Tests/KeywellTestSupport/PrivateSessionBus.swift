import Foundation
import KeywellDBus
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// A real `dbus-daemon` session bus of the test's own, in a temporary home.
///
/// Layout (all under one temporary directory, removed by `stop()`):
/// - `home/` with `.local/share`, `.config`, `.cache`, `.local/state` (the XDG_* variables),
/// - `runtime/` (XDG_RUNTIME_DIR, mode 0700) holding the bus socket `runtime/bus`, so code
///   that falls back to `unix:path=$XDG_RUNTIME_DIR/bus` finds this bus too,
/// - `services/`, the bus's only service directory: put `.service` files there
///   (`installService`) to test D-Bus activation. No system or user service directory is
///   read, so nothing from outside the test can be activated.
///
/// The daemon runs in its own process group under a small watchdog shell; `stop()` (or the
/// death of the test process) ends the group, so services it activated go with it.
// @unchecked: `stopped` is only touched under `lock`; the rest is immutable.
public final class PrivateSessionBus: @unchecked Sendable {
    /// The address clients use (as printed by the daemon, with its guid).
    public let address: String
    public let directory: TemporaryDirectory
    public let serviceDirectory: String
    public let runtimeDirectory: String
    public let home: String
    public let dataHome: String
    public let configHome: String
    public let cacheHome: String
    public let stateHome: String
    public let configFile: String
    /// The watchdog shell (process group leader) that runs the daemon.
    private let daemon: ChildProcess
    /// Write end of the watchdog's lifeline; closing it ends the daemon.
    private let lifelineFD: Int32
    private let lock = NSLock()
    private var stopped = false

    /// Variables for child processes: `DBUS_SESSION_BUS_ADDRESS`, `HOME`, `XDG_RUNTIME_DIR`,
    /// `XDG_DATA_HOME`, `XDG_CONFIG_HOME`, `XDG_CACHE_HOME`, `XDG_STATE_HOME`.
    public var environment: [String: String] {
        [
            "DBUS_SESSION_BUS_ADDRESS": address,
            "HOME": home,
            "XDG_RUNTIME_DIR": runtimeDirectory,
            "XDG_DATA_HOME": dataHome,
            "XDG_CONFIG_HOME": configHome,
            "XDG_CACHE_HOME": cacheHome,
            "XDG_STATE_HOME": stateHome,
        ]
    }

    /// This process's environment with `environment` laid over it (what a spawned CLI or
    /// daemon should get). Other D-Bus and XDG variables of the outer session are dropped.
    public func processEnvironment(adding extra: [String: String] = [:]) -> [String: String] {
        var result = ProcessInfo.processInfo.environment.filter { key, _ in
            !key.hasPrefix("DBUS_") && !key.hasPrefix("XDG_")
        }
        result.merge(environment) { $1 }
        result.merge(extra) { $1 }
        return result
    }

    /// Starts the daemon and waits until it listens.
    /// - Parameter extraConfiguration: more `<busconfig>` elements (limits, policies).
    public init(daemonPath: String = "/usr/bin/dbus-daemon", extraConfiguration: String = "",
                startTimeout: Duration = .seconds(20)) throws {
        let directory = try TemporaryDirectory(prefix: "kwbus")
        self.directory = directory
        home = try directory.createDirectory("home")
        dataHome = try directory.createDirectory("home/.local/share")
        configHome = try directory.createDirectory("home/.config")
        cacheHome = try directory.createDirectory("home/.cache")
        stateHome = try directory.createDirectory("home/.local/state")
        runtimeDirectory = try directory.createDirectory("runtime", mode: 0o700)
        serviceDirectory = try directory.createDirectory("services")
        let socketPath = runtimeDirectory + "/bus"
        let listenAddress = "unix:path=" + socketPath

        configFile = try directory.write(Self.configuration(listen: listenAddress, serviceDirectory: serviceDirectory,
                                                            extra: extraConfiguration), to: "session.conf")

        // The daemon's own environment is what activated services inherit.
        var daemonEnvironment = ProcessInfo.processInfo.environment.filter { key, _ in
            !key.hasPrefix("DBUS_") && !key.hasPrefix("XDG_")
        }
        daemonEnvironment.merge([
            "DBUS_SESSION_BUS_ADDRESS": listenAddress,
            "HOME": home, "XDG_RUNTIME_DIR": runtimeDirectory, "XDG_DATA_HOME": dataHome,
            "XDG_CONFIG_HOME": configHome, "XDG_CACHE_HOME": cacheHome, "XDG_STATE_HOME": stateHome,
        ]) { $1 }

        // A watchdog shell owns the daemon: it waits on a pipe whose only writer is this
        // process, so if the test process dies without stop() (crash, kill -9, SIGPIPE) the
        // pipe closes and the watchdog ends the daemon's process group. No orphaned buses.
        let lifeline = try ChildSpawner.makePipe()
        let watchdog = """
            "$0" "$@" 3<&- &
            echo "pid:$!"
            read _ <&3
            kill -TERM 0
            """
        do {
            daemon = try ChildProcess(executable: "/bin/sh",
                                      arguments: ["-c", watchdog, daemonPath, "--config-file=\(configFile)", "--nofork",
                                                  "--nopidfile", "--print-address=1"],
                                      environment: daemonEnvironment, newProcessGroup: true, extraFileDescriptors: [3: lifeline.read])
        } catch {
            close(lifeline.read)
            close(lifeline.write)
            directory.remove()
            throw error
        }
        close(lifeline.read)
        lifelineFD = lifeline.write
        do {
            // Two lines in either order: the watchdog's "pid:N" and the daemon's address.
            let printed = try daemon.waitForStandardOutput(timeout: startTimeout) { bytes in
                String(decoding: bytes, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("pid:") || $0.hasPrefix("unix:") }.count == 2
                    && bytes.last == UInt8(ascii: "\n")
            }
            let lines = String(decoding: printed, as: UTF8.self).split(separator: "\n").map(String.init)
            guard let addressLine = lines.first(where: { $0.hasPrefix("unix:") }),
                  let pidLine = lines.first(where: { $0.hasPrefix("pid:") }), let pid = pid_t(pidLine.dropFirst(4)) else {
                throw TestSupportError("dbus-daemon printed \(lines)")
            }
            address = addressLine
            daemonPID = pid
        } catch {
            daemon.kill(SIGKILL, group: true)
            _ = try? daemon.wait(timeout: .seconds(5))
            close(lifeline.write)
            directory.remove()
            throw error
        }
    }

    deinit { stop() }

    /// A new connection to this bus (registered, with a unique name).
    public func connect() throws -> DBusConnection {
        try DBusConnection(address: address)
    }

    /// Writes `services/<name>.service` so that a call to `name` starts `exec`.
    @discardableResult
    public func installService(name: String, exec: String, extraLines: [String] = []) throws -> String {
        let text = (["[D-BUS Service]", "Name=\(name)", "Exec=\(exec)"] + extraLines).joined(separator: "\n") + "\n"
        return try directory.write(text, to: "services/\(name).service", mode: 0o644)
    }

    /// The daemon's pid (for tests that want to kill the bus under a client).
    public let daemonPID: pid_t
    public var isRunning: Bool { daemon.isRunning && Glibc.kill(daemonPID, 0) == 0 }

    /// What the daemon printed on stderr so far (warnings, activation failures).
    public var daemonLog: String { String(decoding: daemon.standardErrorSoFar, as: UTF8.self) }

    /// Stops the daemon and everything it activated, and deletes the temporary home. Idempotent.
    public func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        close(lifelineFD)  // the watchdog sends SIGTERM to the whole group
        if (try? daemon.wait(timeout: .seconds(3), outputGrace: .milliseconds(200))) == nil {
            daemon.kill(SIGKILL, group: true)
            _ = try? daemon.wait(timeout: .seconds(5), outputGrace: .milliseconds(200))
        }
        // Whatever ignored SIGTERM (a stuck daemon, an activated service) goes now.
        _ = Glibc.kill(-daemon.pid, SIGKILL)
        directory.remove()
    }

    static func configuration(listen: String, serviceDirectory: String, extra: String) -> String {
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;")
        }
        return """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <keep_umask/>
              <listen>\(escape(listen))</listen>
              <auth>EXTERNAL</auth>
              <servicedir>\(escape(serviceDirectory))</servicedir>
              <policy context="default">
                <allow user="*"/>
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
              <limit name="max_incoming_bytes">1000000000</limit>
              <limit name="max_outgoing_bytes">1000000000</limit>
              <limit name="max_message_size">134217728</limit>
              <limit name="max_completed_connections">100000</limit>
              <limit name="max_incomplete_connections">10000</limit>
              <limit name="max_connections_per_user">100000</limit>
              <limit name="max_pending_service_starts">10000</limit>
              <limit name="max_names_per_connection">50000</limit>
              <limit name="max_match_rules_per_connection">50000</limit>
              <limit name="max_replies_per_connection">50000</limit>
            \(extra)
            </busconfig>

            """
    }
}
