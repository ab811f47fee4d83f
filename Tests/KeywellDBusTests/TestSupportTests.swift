import Foundation
import KeywellDBus
import KeywellTestSupport
import Testing

@Suite("Test support: private bus, child processes")
struct TestSupportTests {
    @Test func childProcessCapturesOutputAndStatus() throws {
        let output = try ChildProcess.run("/bin/sh", arguments: ["-c", "cat; echo err >&2; exit 3"],
                                          environment: ["PATH": "/usr/bin:/bin"], standardInput: Array("in put".utf8))
        #expect(output.termination.exitCode == 3)
        #expect(output.standardOutputText == "in put")
        #expect(output.standardErrorText == "err\n")
    }

    @Test func childProcessLargeInputAndOutput() throws {
        let input = [UInt8](repeating: 65, count: 4 << 20)
        let output = try ChildProcess.run("/bin/cat", standardInput: input)
        #expect(output.standardOutput == input)
    }

    @Test func childProcessTimeoutAndKill() throws {
        let child = try ChildProcess(executable: "/bin/sleep", arguments: ["30"])
        #expect(throws: TestSupportError.self) { try child.wait(timeout: .milliseconds(100)) }
        child.kill()
        let output = try child.wait(timeout: .seconds(5))
        #expect(output.termination.signal == SIGKILL)
        #expect(throws: TestSupportError.self) {
            try ChildProcess.run("/bin/sleep", arguments: ["30"], timeout: .milliseconds(100))
        }
    }

    @Test func childProcessEnvironmentAndDirectory() throws {
        let directory = try TemporaryDirectory()
        let output = try ChildProcess.run("/bin/sh", arguments: ["-c", "echo $ONLY_THIS; pwd; ls /proc/self/fd | wc -l"],
                                          environment: ["ONLY_THIS": "yes", "PATH": "/usr/bin:/bin"],
                                          workingDirectory: directory.path)
        let lines = output.standardOutputText.split(separator: "\n").map(String.init)
        #expect(lines.first == "yes")
        #expect(lines.dropFirst().first == directory.path)
        // 0, 1, 2 and the fd ls itself opens: nothing leaked from this process.
        #expect(Int(lines.last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 99 <= 4)
    }

    @Test func temporaryDirectoryIsRemoved() throws {
        var directory: TemporaryDirectory? = try TemporaryDirectory()
        let path = directory!.path
        try directory!.write("x", to: "a/b/c.txt")
        #expect(FileManager.default.fileExists(atPath: path + "/a/b/c.txt"))
        directory = nil
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func busEnvironmentAndFallbackAddress() throws {
        let bus = try PrivateSessionBus()
        #expect(bus.environment["DBUS_SESSION_BUS_ADDRESS"] == bus.address)
        #expect(bus.environment["XDG_DATA_HOME"]?.hasPrefix(bus.directory.path) == true)
        // The XDG_RUNTIME_DIR fallback finds the same bus.
        let viaRuntime = try DBusConnection.sessionBus(environment: ["XDG_RUNTIME_DIR": bus.runtimeDirectory])
        #expect(viaRuntime.uniqueName != nil)
        let viaVariable = try DBusConnection.sessionBus(environment: bus.environment)
        try viaVariable.ping(viaRuntime.uniqueName!)
        // No outside service is activatable: only what the test installs.
        let activatable = try viaVariable.callBus("ListActivatableNames")
        #expect(activatable.first?.stringArrayValue?.allSatisfy { $0 == "org.freedesktop.DBus" } == true)
        viaRuntime.close()
        viaVariable.close()
        let path = bus.directory.path
        bus.stop()
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(throws: DBusError.self) { try DBusConnection(address: bus.address) }
    }

    @Test func activationStartsInstalledServicesWithTheBusEnvironment() throws {
        let bus = try PrivateSessionBus()
        let marker = bus.directory.subpath("activated.env")
        let script = try bus.directory.write("#!/bin/sh\nenv > \(marker)\nexit 0\n", to: "service.sh", mode: 0o755)
        try bus.installService(name: "org.keywell.Activated", exec: script)
        let connection = try bus.connect()
        #expect(throws: DBusError.self) { try connection.startService("org.keywell.Activated", timeout: .seconds(10)) }
        let environment = try String(contentsOfFile: marker, encoding: .utf8)
        #expect(environment.contains("DBUS_SESSION_BUS_ADDRESS="))
        #expect(environment.contains("XDG_DATA_HOME=\(bus.dataHome)"))
        #expect(environment.contains("HOME=\(bus.home)"))
        connection.close()
    }
}

extension DBusConnection {
    func callBus(_ member: String, _ arguments: [DBusValue] = []) throws(DBusError) -> [DBusValue] {
        try call(destination: StandardInterface.busName, path: StandardInterface.busPath, interface: StandardInterface.bus,
                 member: member, arguments: arguments)
    }
}
