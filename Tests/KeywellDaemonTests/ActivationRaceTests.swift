import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// Issue 3, the activation race: a keywelld holds the instance lock (pam_keywell started it at
/// login) but does not own its bus name yet, and a client's call makes dbus-daemon activate a
/// second one. The first is held back for real with `KEYWELL_TEST_CLAIM_DELAY_MS` (a pause
/// between connecting and claiming the name); everything else is the real daemon on a private
/// dbus-daemon. The activation files start keywelld through a shell that records each
/// activated instance's exit status, which shows that dbus-daemon really started a second one.
@Suite(.serialized) struct ActivationRaceTests {
    @Test(arguments: [KeywellNames.busName, "org.freedesktop.secrets"])
    func aCallThatActivatesASecondInstanceIsServedByTheFirst(name: String) throws {
        let world = try RaceWorld()
        let first = try world.startFirst(claimDelayMilliseconds: 4000)
        defer { first.kill() }
        try world.waitForLock()
        try #require(try !world.client.nameHasOwner(name), "set-up: the first daemon must not own \(name) yet")

        let reply: [DBusValue]
        if name == KeywellNames.busName {
            reply = try world.client.call(destination: name, path: KeywellNames.objectPath, interface: KeywellNames.interface,
                                          member: "GetSearchList", timeout: .seconds(60))
            #expect(reply == [.stringArray(["login"])])
        } else {
            reply = try world.client.call(destination: name, path: "/org/freedesktop/secrets", interface: "org.freedesktop.Secret.Service",
                                          member: "OpenSession", arguments: ["plain", .variant("")], timeout: .seconds(60))
            #expect(reply.count == 2)
        }

        // dbus-daemon did start a second keywelld, which left quietly and successfully...
        let statuses = try world.waitForActivatedExits(1)
        #expect(statuses == [0], "\(world.activatedLog)")
        #expect(!world.activatedLog.contains("keywelld: "), "an error line: \(world.activatedLog)")
        #expect(world.activatedLog.contains("which serves this activation"), "\(world.activatedLog)")
        // ...and the first one, still running, is the one that answered.
        #expect(first.isRunning)
        #expect(try world.ownerPID(of: KeywellNames.busName) == first.pid)
    }

    @Test func aSecondInstanceStartedByHandIsStillRefusedAtOnce() throws {
        let world = try RaceWorld()
        let first = try world.startFirst(claimDelayMilliseconds: 4000)
        defer { first.kill() }
        try world.waitForLock()
        let second = try ChildProcess.run(DaemonFixture.keywelldPath, environment: world.fixture.daemonEnvironment, timeout: .seconds(30))
        #expect(second.termination.exitCode == 1)
        #expect(second.standardErrorText.contains("already running for this user: pid \(first.pid)"), "\(second.standardErrorText)")
        #expect(first.isRunning)
    }

    @Test func anActivatedInstanceFailsClearlyWhenTheLockHolderNeverAppearsOnItsBus() throws {
        let world = try RaceWorld()
        // The holder of the lock is on another bus (one that does not exist): it never comes here.
        var environment = world.fixture.daemonEnvironment
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=" + world.fixture.bus.directory.subpath("elsewhere-bus")
        let first = try ChildProcess(executable: DaemonFixture.keywelldPath, arguments: ["--verbose"], environment: environment)
        defer { first.kill() }
        try world.waitForLock()

        do {
            try world.client.call(destination: KeywellNames.busName, path: KeywellNames.objectPath, interface: KeywellNames.interface,
                                  member: "GetSearchList", timeout: .seconds(60))
            Issue.record("the call succeeded, but nobody should serve it")
        } catch {
            #expect(error.name == "org.freedesktop.DBus.Error.Spawn.ChildExited", "\(error)")
        }
        #expect(try world.waitForActivatedExits(1) == [1])
        #expect(world.activatedLog.contains("keywelld: already running for this user: pid \(first.pid)"), "\(world.activatedLog)")
        #expect(world.activatedLog.contains("nobody claimed org.keywell.Keychain on"), "\(world.activatedLog)")
        #expect(first.isRunning)
    }

    @Test func whenTheLockHolderDiesBeforeClaimingTheActivatedInstanceTakesOver() async throws {
        let world = try RaceWorld()
        let first = try world.startFirst(claimDelayMilliseconds: 60_000)
        defer { first.kill() }
        try world.waitForLock()
        let client = world.client
        async let reply = client.callAsync(destination: KeywellNames.busName, path: KeywellNames.objectPath,
                                           interface: KeywellNames.interface, member: "GetSearchList", timeout: .seconds(60))
        try waitUntil(timeout: .seconds(30)) { world.activatedLog.contains("waiting for org.keywell.Keychain") }
        first.kill(SIGKILL)
        _ = try first.wait(timeout: .seconds(10))

        #expect(try await reply == [.stringArray(["login"])])
        let owner = try world.ownerPID(of: KeywellNames.busName)
        #expect(owner != first.pid)
        #expect(CallerIdentityProbe.executable(of: owner)?.hasSuffix("/keywelld") == true)
        #expect(world.activatedLog.contains("carrying on as the one instance"), "\(world.activatedLog)")
    }

    /// The PAM-started daemon runs before any session bus exists; a bus with activation files
    /// then appears at $XDG_RUNTIME_DIR/bus and a client calls at once, while the daemon is still
    /// getting onto the new bus (held there by the hook so that the window is surely open).
    @Test func aCallRightAfterTheBusAppearsIsServedByTheDaemonThatWasWaitingForIt() throws {
        let folder = try TemporaryDirectory(prefix: "kwrace")
        defer { folder.remove() }
        let runtime = try folder.createDirectory("runtime")
        let home = try folder.createDirectory("home")
        let services = try folder.createDirectory("services", mode: 0o755)
        let environment = ["HOME": home, "XDG_RUNTIME_DIR": runtime, "PATH": "/usr/bin:/bin", "KEYWELL_TEST_FAST_KDF": "1"]
        let activatedLog = folder.subpath("activated.log")
        let statusFile = folder.subpath("activated-status")
        let wrapper = try folder.write(RaceWorld.wrapperScript(log: activatedLog, statusFile: statusFile), to: "keywelld-activated", mode: 0o755)
        _ = try folder.write("[D-BUS Service]\nName=\(KeywellNames.busName)\nExec=\(wrapper)\n",
                             to: "services/\(KeywellNames.busName).service", mode: 0o644)

        var firstEnvironment = environment
        firstEnvironment["KEYWELL_TEST_CLAIM_DELAY_MS"] = "3000"
        let first = try ChildProcess(executable: DaemonFixture.keywelldPath, arguments: ["--verbose"], environment: firstEnvironment)
        defer { first.kill() }
        try waitUntil { FileManager.default.fileExists(atPath: runtime + "/keywell/control") }
        #expect(try ControlClient.send(socket: runtime + "/keywell/control", op: "O", fields: [Array("login-pw".utf8)]).status == 0)

        let configuration = try folder.write("""
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(runtime)/bus</listen>
              <auth>EXTERNAL</auth>
              <servicedir>\(services)</servicedir>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>

            """, to: "bus.conf", mode: 0o644)
        let bus = try ChildProcess(executable: "/usr/bin/dbus-daemon",
                                   arguments: ["--config-file=\(configuration)", "--nofork", "--nopidfile", "--print-address=1"],
                                   environment: environment, newProcessGroup: true)
        defer { bus.kill(SIGKILL, group: true) }
        let address = String(decoding: try bus.waitForStandardOutput { $0.contains(UInt8(ascii: "\n")) }, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let client = try DBusConnection(address: address)
        defer { client.close() }

        let info = try client.call(destination: KeywellNames.busName, path: KeywellNames.objectPath, interface: KeywellNames.interface,
                                   member: "GetInfo", arguments: ["login"], timeout: .seconds(60)).stringVariantDict(at: 0)
        #expect(info["locked"] == false, "the keychain the PAM hand-off unlocked: the first daemon answered")
        #expect(try client.unixProcessID(of: try #require(try client.nameOwner(KeywellNames.busName))) == UInt32(first.pid))
        try waitUntil(timeout: .seconds(30)) { FileManager.default.fileExists(atPath: statusFile) }
        let log = (try? String(contentsOfFile: activatedLog, encoding: .utf8)) ?? ""
        #expect(try String(contentsOfFile: statusFile, encoding: .utf8) == "0\n", "\(log)")
        #expect(first.isRunning)
    }
}

/// A private bus (DaemonFixture's) whose activation files for both names start the real keywelld
/// through a recording shell, and a first keywelld started by hand for the same user folders.
// @unchecked: immutable after init.
private final class RaceWorld: @unchecked Sendable {
    let fixture: DaemonFixture
    let activatedLogPath: String
    let statusPath: String

    init() throws {
        fixture = try DaemonFixture(activation: false)
        activatedLogPath = fixture.bus.directory.subpath("activated.log")
        statusPath = fixture.bus.directory.subpath("activated-status")
        let wrapper = try fixture.bus.directory.write(Self.wrapperScript(log: activatedLogPath, statusFile: statusPath),
                                                      to: "keywelld-activated", mode: 0o755)
        try fixture.bus.installService(name: KeywellNames.busName, exec: wrapper)
        try fixture.bus.installService(name: "org.freedesktop.secrets", exec: wrapper)
    }

    var client: DBusConnection { fixture.client }

    /// Not `exec`: the shell outlives keywelld to write down how it ended.
    static func wrapperScript(log: String, statusFile: String) -> String {
        """
        #!/bin/sh
        KEYWELL_TEST_FAST_KDF=1 '\(DaemonFixture.keywelldPath)' --verbose 2>>'\(log)'
        status=$?
        echo "$status" >>'\(statusFile)'
        exit "$status"

        """
    }

    /// The "PAM-started" daemon: same folders and bus, slow to claim its name.
    func startFirst(claimDelayMilliseconds: Int) throws -> ChildProcess {
        var environment = fixture.daemonEnvironment
        environment["KEYWELL_TEST_CLAIM_DELAY_MS"] = String(claimDelayMilliseconds)
        return try ChildProcess(executable: DaemonFixture.keywelldPath, arguments: ["--verbose"], environment: environment)
    }

    /// The control socket comes after the instance lock: once it exists, the lock is held.
    func waitForLock() throws {
        let control = fixture.bus.runtimeDirectory + "/keywell/control"
        try waitUntil(timeout: .seconds(30)) { FileManager.default.fileExists(atPath: control) }
    }

    var activatedLog: String { (try? String(contentsOfFile: activatedLogPath, encoding: .utf8)) ?? "" }

    /// The exit statuses of the activated instances, once `count` have ended.
    func waitForActivatedExits(_ count: Int) throws -> [Int32] {
        func statuses() -> [Int32] {
            ((try? String(contentsOfFile: statusPath, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { Int32($0) }
        }
        try waitUntil(timeout: .seconds(30)) { statuses().count >= count }
        return statuses()
    }

    func ownerPID(of name: String) throws -> pid_t {
        guard let owner = try client.nameOwner(name) else { throw TestSupportError("nobody owns \(name)") }
        return pid_t(bitPattern: try client.unixProcessID(of: owner))
    }
}
