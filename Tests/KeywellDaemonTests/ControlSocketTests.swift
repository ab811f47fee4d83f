import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// The PAM control socket (docs/control-protocol.md) of the real daemon.
@Suite struct ControlSocketTests {
    @Test func pingOpenCloseAndChangePassword() throws {
        let fixture = try DaemonFixture()
        try fixture.call("ListKeychains")  // activates the daemon
        let socket = fixture.bus.runtimeDirectory + "/keywell/control"
        let recorder = try SignalRecorder(fixture.client)

        let ping = try ControlClient.send(socket: socket, op: "Q")
        #expect(ping.status == 0)
        #expect(ping.message.hasPrefix("keywelld "))

        // First login: login is created, unlocked, the default and the head of the search list.
        try fixture.call("SetSearchList", [.stringArray(["elsewhere"])])
        #expect(try ControlClient.send(socket: socket, op: "O", fields: [Array("first".utf8)]).status == 0)
        #expect(try fixture.info("login")["locked"] == false)
        #expect(try fixture.info("login")["isDefault"] == true)
        #expect(try fixture.call("GetSearchList") == [.stringArray(["login", "elsewhere"])])
        #expect(try fixture.info("login")["lockAfterSeconds"] == .uint32(0))

        // A second session; closing one keeps login unlocked, closing the last locks it.
        #expect(try ControlClient.send(socket: socket, op: "O", fields: [Array("first".utf8)]).status == 0)
        #expect(try ControlClient.send(socket: socket, op: "C").status == 0)
        #expect(try fixture.info("login")["locked"] == false)
        #expect(try ControlClient.send(socket: socket, op: "C").status == 0)
        #expect(try fixture.info("login")["locked"] == true)
        #expect(recorder.wait(for: signal("KeychainLocked", "login")))
        #expect(try ControlClient.send(socket: socket, op: "C").status == 0, "never below zero")

        // The next login unlocks it.
        #expect(try ControlClient.send(socket: socket, op: "O", fields: [Array("first".utf8)]).status == 0)
        #expect(try fixture.info("login")["locked"] == false)
        // A login without a password only counts.
        #expect(try ControlClient.send(socket: socket, op: "O").status == 0)

        // Password change: re-wrapped, lock state kept.
        #expect(try ControlClient.send(socket: socket, op: "P", fields: [Array("first".utf8), Array("second".utf8)]).status == 0)
        #expect(try fixture.info("login")["locked"] == false)
        #expect(try ControlClient.send(socket: socket, op: "P", fields: [Array("wrong".utf8), Array("x".utf8)]).status == SecStatus.authFailed)
        try fixture.call("Lock", ["login"])
        try fixture.call("Unlock", ["login", secret("second")])
    }

    @Test func changePasswordWithoutLoginIsNoSuchKeychain() throws {
        let fixture = try DaemonFixture()
        try fixture.call("ListKeychains")
        let socket = fixture.bus.runtimeDirectory + "/keywell/control"
        #expect(try ControlClient.send(socket: socket, op: "P", fields: [[1], [2]]).status == SecStatus.noSuchKeychain)
        #expect(try ControlClient.send(socket: socket, op: "C").status == 0, "nothing to lock is fine")
    }

    @Test func driftIsRepairedByTheNextUnlockWithTheOldPassword() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login", password: "keychain-pw")
        try fixture.call("Lock", ["login"])
        let socket = fixture.bus.runtimeDirectory + "/keywell/control"
        let drift = try ControlClient.send(socket: socket, op: "O", fields: [Array("login-pw".utf8)])
        #expect(drift.status == SecStatus.authFailed)
        #expect(!drift.message.contains("login-pw"))
        #expect(try fixture.info("login")["locked"] == true)

        // The user unlocks with the keychain's own (old) password: it is re-wrapped to the login password.
        try fixture.call("Unlock", ["login", secret("keychain-pw")])
        try fixture.call("Lock", ["login"])
        expectKeychainError("AuthFailed", SecStatus.authFailed) { try fixture.call("Unlock", ["login", secret("keychain-pw")]) }
        try fixture.call("Unlock", ["login", secret("login-pw")])
        #expect(!fixture.daemonLog.contains("login-pw") && !fixture.daemonLog.contains("keychain-pw"))
    }

    @Test func malformedRequestsAreRefused() throws {
        let fixture = try DaemonFixture()
        try fixture.call("ListKeychains")
        let socket = fixture.bus.runtimeDirectory + "/keywell/control"
        #expect(try ControlClient.send(socket: socket, op: "Z").status == SecStatus.unimplemented)
        #expect(try ControlClient.send(socket: socket, op: "C", fields: [[1]]).status == SecStatus.param)
        #expect(try ControlClient.send(socket: socket, op: "P", fields: [[1]]).status == SecStatus.param)
        let tooLong = [UInt8](repeating: 0x41, count: 8193)
        #expect(try ControlClient.send(socket: socket, op: "O", fields: [tooLong]).status == SecStatus.param)
        #expect(try ControlClient.exchange(socket: socket, bytes: Array("XXXX".utf8) + [0x51, 0]).status == SecStatus.param)
        // A client that sends half a request and stalls does not stall the others.
        let staller = try ControlClient.connect(socket)
        defer { close(staller) }
        _ = Array("KWC1O".utf8).withUnsafeBytes { send(staller, $0.baseAddress, $0.count, 0) }
        #expect(try ControlClient.send(socket: socket, op: "Q").status == 0)
    }

    @Test func onlyRootAndTheUserMayTalkToIt() throws {
        let user = try UnprivilegedDaemon()
        // Root (the login process) may.
        #expect(try ControlClient.send(socket: user.controlSocket, op: "Q").status == 0)
        // The user may.
        #expect(try user.runClient(asUID: UnprivilegedDaemon.uid) == "answered")
        // Anyone else is closed on without a byte read, even when the file permissions let it in.
        #expect(try user.runClient(asUID: 1) == "closed")
        #expect(try ControlClient.send(socket: user.controlSocket, op: "Q").status == 0, "and the daemon goes on")
        var info = stat()
        #expect(lstat(user.controlSocket, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(lstat(user.runtime + "/keywell", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
    }
}

/// keywelld running as `nobody` with its own home and runtime folder (no bus), for the checks
/// that need a daemon of another uid than the test's root.
final class UnprivilegedDaemon {
    static let uid: uid_t = 65534
    let folder: TemporaryDirectory
    let runtime: String
    let home: String
    let daemon: ChildProcess
    var controlSocket: String { runtime + "/keywell/control" }

    init() throws {
        folder = try TemporaryDirectory(prefix: "kwuser")
        chmod(folder.path, 0o711)
        runtime = try folder.createDirectory("runtime")
        home = try folder.createDirectory("home")
        chown(runtime, Self.uid, gid_t(Self.uid))
        chown(home, Self.uid, gid_t(Self.uid))
        let environment = ["HOME": home, "XDG_RUNTIME_DIR": runtime, "PATH": "/usr/bin:/bin", "KEYWELL_TEST_FAST_KDF": "1"]
        daemon = try ChildProcess(executable: "/usr/bin/setpriv",
                                  arguments: ["--reuid=\(Self.uid)", "--regid=\(Self.uid)", "--clear-groups", "--",
                                              DaemonFixture.keywelldPath],
                                  environment: environment, workingDirectory: "/")
        let socket = runtime + "/keywell/control"
        try waitUntil { FileManager.default.fileExists(atPath: socket) }
    }

    deinit {
        daemon.kill()
        _ = try? daemon.wait(timeout: .seconds(5))
    }

    /// A Python client as `uid` (with CAP_DAC_OVERRIDE, so only the daemon's peer check can
    /// stop it): "answered", or "closed" when the daemon hung up without answering.
    func runClient(asUID uid: uid_t) throws -> String {
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(sys.argv[1])
            try:
                s.sendall(b"KWC1Q\\x00")
                data = s.recv(64)
            except (BrokenPipeError, ConnectionResetError):
                data = b""
            print("answered" if data.startswith(b"KWC1") else "closed")
            """
        let output = try ChildProcess.run("/usr/bin/setpriv", arguments: [
            "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--inh-caps=+dac_override", "--ambient-caps=+dac_override", "--",
            "/usr/bin/python3", "-c", script, controlSocket,
        ], timeout: .seconds(20))
        return output.standardOutputText.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
