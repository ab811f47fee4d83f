import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// The daemon as a process: activation, single instance, signals, hardening, a late bus.
@Suite struct ProcessTests {
    @Test func activationStartsTheDaemonOnTheFirstCall() throws {
        let fixture = try DaemonFixture()
        #expect(try fixture.client.nameHasOwner(KeywellNames.busName) == false)
        #expect(try fixture.call("GetSearchList") == [.stringArray(["login"])])
        let pid = try fixture.daemonPID()
        #expect(CallerIdentityProbe.executable(of: pid)?.hasSuffix("/keywelld") == true)
    }

    @Test func aSecondInstanceOnTheSameBusIsRefusedClearly() throws {
        let fixture = try DaemonFixture()
        try fixture.call("ListKeychains")
        let first = try fixture.daemonPID()
        // Another runtime folder, so the instance lock does not stop it first: the bus name does.
        let otherRuntime = try fixture.bus.directory.createDirectory("other-runtime")
        var environment = fixture.daemonEnvironment
        environment["XDG_RUNTIME_DIR"] = otherRuntime
        let second = try ChildProcess.run(DaemonFixture.keywelldPath, environment: environment, timeout: .seconds(20))
        #expect(second.termination.exitCode == 1)
        #expect(second.standardErrorText.contains("org.keywell.Keychain is already owned by pid \(first)"), "\(second.standardErrorText)")
        #expect(try fixture.daemonPID() == first)
    }

    @Test func aSecondInstanceForTheSameRuntimeFolderIsRefusedClearly() throws {
        let fixture = try DaemonFixture()
        try fixture.call("ListKeychains")
        let first = try fixture.daemonPID()
        let second = try ChildProcess.run(DaemonFixture.keywelldPath, environment: fixture.daemonEnvironment, timeout: .seconds(20))
        #expect(second.termination.exitCode == 1)
        #expect(second.standardErrorText.contains("already running for this user: pid \(first)"), "\(second.standardErrorText)")
    }

    @Test func sigtermLocksEverythingAndExitsZero() throws {
        let fixture = try DaemonFixture(activation: false)
        let daemon = try ChildProcess(executable: DaemonFixture.keywelldPath, environment: fixture.daemonEnvironment)
        try fixture.waitForName()
        try fixture.createKeychain("login")
        try fixture.createKeychain("other")
        let recorder = try SignalRecorder(fixture.client)
        daemon.kill(SIGTERM)
        let output = try daemon.wait(timeout: .seconds(10))
        #expect(output.termination.exitCode == 0, "\(output.standardErrorText)")
        #expect(recorder.wait(for: signal("KeychainLocked", "login")))
        #expect(recorder.wait(for: signal("KeychainLocked", "other")))
        #expect(!FileManager.default.fileExists(atPath: fixture.bus.runtimeDirectory + "/keywell/control"))
    }

    @Test func theDaemonIsNotDumpableAndHasNoCoreLimit() throws {
        let fixture = try DaemonFixture()
        try fixture.call("ListKeychains")
        let pid = try fixture.daemonPID()
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let core = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") })
        #expect(core.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"], "\(core)")
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        #expect(status.contains("Umask:\t0077"))
        // Not dumpable: the kernel makes /proc/<pid> root's even for another user's process.
        let user = try UnprivilegedDaemon()
        var info = stat()
        #expect(stat("/proc/\(user.daemon.pid)/status", &info) == 0)
        #expect(info.st_uid == 0, "a dumpable process's /proc files belong to its user")
        let plain = try ChildProcess(executable: "/usr/bin/setpriv",
                                     arguments: ["--reuid=\(UnprivilegedDaemon.uid)", "--regid=\(UnprivilegedDaemon.uid)", "--clear-groups",
                                                 "/bin/sleep", "5"])
        defer { plain.kill() }
        // Once it runs sleep, setpriv has changed its uid (it does so before exec).
        try waitUntil { (try? String(contentsOfFile: "/proc/\(plain.pid)/comm", encoding: .utf8)) == "sleep\n" }
        var plainInfo = stat()
        #expect(stat("/proc/\(plain.pid)/status", &plainInfo) == 0)
        #expect(plainInfo.st_uid == UnprivilegedDaemon.uid, "the control case: an ordinary process")
    }

    @Test func withoutABusItServesTheControlSocketAndClaimsTheNameWhenOneAppears() throws {
        let folder = try TemporaryDirectory(prefix: "kwlate")
        let runtime = try folder.createDirectory("runtime")
        let home = try folder.createDirectory("home")
        let environment = ["HOME": home, "XDG_RUNTIME_DIR": runtime, "PATH": "/usr/bin:/bin", "KEYWELL_TEST_FAST_KDF": "1"]
        let daemon = try ChildProcess(executable: DaemonFixture.keywelldPath, arguments: ["--verbose"], environment: environment)
        defer { daemon.kill() }
        let control = runtime + "/keywell/control"
        try waitUntil { FileManager.default.fileExists(atPath: control) }
        #expect(try ControlClient.send(socket: control, op: "O", fields: [Array("login-pw".utf8)]).status == 0)
        #expect(FileManager.default.fileExists(atPath: home + "/.local/share/keywell/keychains/login.keychain-db"))

        // Now a bus appears at $XDG_RUNTIME_DIR/bus.
        let bus = try ChildProcess(executable: "/usr/bin/dbus-daemon",
                                   arguments: ["--session", "--nofork", "--nopidfile", "--address=unix:path=\(runtime)/bus", "--print-address=1"],
                                   environment: environment)
        defer { bus.kill() }
        let address = String(decoding: try bus.waitForStandardOutput { $0.contains(UInt8(ascii: "\n")) }, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let client = try DBusConnection(address: address)
        defer { client.close() }
        try waitUntil(timeout: .seconds(5)) { (try? client.nameHasOwner(KeywellNames.busName)) == true }
        let info = try client.call(destination: KeywellNames.busName, path: KeywellNames.objectPath, interface: KeywellNames.interface,
                                   member: "GetInfo", arguments: ["login"]).stringVariantDict(at: 0)
        #expect(info["locked"] == false)
        #expect(info["isDefault"] == true)
    }
}

/// Polls `condition` every 10 ms.
func waitUntil(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw TestSupportError("condition not met within \(timeout)") }
        usleep(10_000)
    }
}

enum CallerIdentityProbe {
    static func executable(of pid: pid_t) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
    }
}
