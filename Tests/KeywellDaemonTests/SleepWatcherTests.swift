import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// Lock on sleep, against a stand-in for logind on a private "system" bus.
@Suite struct SleepWatcherTests {
    @Test func prepareForSleepLocksTheKeychainsThatAskForIt() throws {
        let logind = try FakeLogind()
        let fixture = try DaemonFixture(environment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.bus.address])
        try fixture.createKeychain("login")
        try fixture.createKeychain("laptop")
        try fixture.createKeychain("desk")
        try fixture.call("SetSettings", ["desk", .stringVariantDict(["lockOnSleep": false])])
        try logind.waitForInhibitor()
        let recorder = try SignalRecorder(fixture.client)

        try logind.announceSleep(true)
        #expect(recorder.wait(for: signal("KeychainLocked", "laptop")))
        try logind.waitForInhibitorRelease()
        #expect(try fixture.info("desk")["locked"] == false)
        #expect(try fixture.info("login")["locked"] == false, "login does not lock on sleep")
        #expect(!recorder.all.contains(signal("KeychainLocked", "desk")))

        try logind.announceSleep(false)
        try logind.waitForInhibitor(count: 2)  // taken again after waking
    }

    /// Another user on the system bus sends PrepareForSleep(true) straight to the daemon's
    /// connection: it is not logind's, so nothing locks; logind's own announcement still works.
    @Test func prepareForSleepFromAnyoneButLogindsOwnerIsIgnored() throws {
        let logind = try FakeLogind()
        let fixture = try DaemonFixture(environment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.bus.address])
        try fixture.createKeychain("laptop")
        try logind.waitForInhibitor()
        let daemon = try #require(logind.inhibitorCallers.first, "the daemon's unique name on the system bus")
        let recorder = try SignalRecorder(fixture.client)

        // A connection of another uid (nobody), and then one of the test's own that does not own login1.
        let stranger = try FakeLogind.sendPrepareForSleep(on: logind.bus, to: daemon, asUID: 65534)
        let sameUser = try logind.bus.connect()
        defer { sameUser.close() }
        try sameUser.emitSignal(path: "/org/freedesktop/login1", interface: "org.freedesktop.login1.Manager",
                                member: "PrepareForSleep", arguments: [.bool(true)], destination: daemon)
        for sender in [stranger, try #require(sameUser.uniqueName)] {
            // The daemon either locks (the attack worked) or says it ignored this sender.
            try waitUntil {
                recorder.all.contains(signal("KeychainLocked", "laptop"))
                    || fixture.daemonLog.contains("ignored PrepareForSleep from \(sender),")
            }
            #expect(!recorder.all.contains(signal("KeychainLocked", "laptop")), "a fake PrepareForSleep from \(sender) locked")
        }
        #expect(try fixture.info("laptop")["locked"] == false)

        try logind.announceSleep(true)
        #expect(recorder.wait(for: signal("KeychainLocked", "laptop")))
    }
}

/// Owns org.freedesktop.login1 on its own bus, answers Inhibit with a pipe's write end, and
/// sends PrepareForSleep.
// @unchecked: `readEnds` and `callers` are only touched under `lock`.
final class FakeLogind: @unchecked Sendable {
    let bus: PrivateSessionBus
    let connection: DBusConnection
    private let lock = NSLock()
    private var readEnds: [Int32] = []
    private var callers: [String] = []

    init() throws {
        bus = try PrivateSessionBus()
        connection = try bus.connect()
        let manager = DBusInterface(name: "org.freedesktop.login1.Manager", methods: [
            DBusMethod(name: "Inhibit", inputs: [DBusArgument("what", .string), DBusArgument("who", .string),
                                                 DBusArgument("why", .string), DBusArgument("mode", .string)],
                       outputs: [DBusArgument("fd", .unixFD)]),
        ])
        let object = DBusClosureObject(interfaces: [manager]) { [weak self] call in
            guard let self else { return }
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { call.reply(error: .failed("pipe")); return }
            lock.withLock {
                readEnds.append(ends[0])
                callers.append(call.sender)
            }
            call.reply([.unixFD(ends[1])])
            close(ends[1])  // the daemon holds its own copy now
        }
        try connection.register(object, at: "/org/freedesktop/login1")
        _ = try connection.requestName("org.freedesktop.login1", flags: [.doNotQueue])
    }

    deinit {
        connection.close()
        bus.stop()
        lock.withLock { readEnds.forEach { close($0) } }
    }

    func announceSleep(_ sleeping: Bool) throws {
        try connection.emitSignal(path: "/org/freedesktop/login1", interface: "org.freedesktop.login1.Manager",
                                  member: "PrepareForSleep", arguments: [.bool(sleeping)])
    }

    /// The unique names that asked for an inhibitor (the daemon's connection).
    var inhibitorCallers: [String] { lock.withLock { callers } }

    /// Sends a unicast PrepareForSleep(true) to `destination` from a Python process running as
    /// `uid` (with CAP_DAC_OVERRIDE only to reach the test's private socket); returns its unique
    /// name once the bus has taken the signal (a later call of the same connection was answered).
    static func sendPrepareForSleep(on bus: PrivateSessionBus, to destination: String, asUID uid: uid_t) throws -> String {
        let script = """
            import sys, dbus, dbus.lowlevel
            connection = dbus.bus.BusConnection(sys.argv[1])
            message = dbus.lowlevel.SignalMessage("/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep")
            message.set_destination(sys.argv[2])
            message.append(True, signature="b")
            connection.send_message(message)
            connection.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", "", [])
            print(connection.get_unique_name())
            """
        let output = try ChildProcess.run("/usr/bin/setpriv", arguments: [
            "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--inh-caps=+dac_override", "--ambient-caps=+dac_override", "--",
            "/usr/bin/python3", "-c", script, bus.address, destination,
        ], timeout: .seconds(20))
        let name = output.standardOutputText.trimmingCharacters(in: .whitespacesAndNewlines)
        guard name.hasPrefix(":") else { throw TestSupportError("the stranger did not send: \(output.standardErrorText)") }
        return name
    }

    func waitForInhibitor(count: Int = 1) throws {
        try waitUntil { lock.withLock { readEnds.count >= count } }
    }

    /// The daemon closed the inhibitor it was given (the read end sees EOF).
    func waitForInhibitorRelease() throws {
        let fd = try #require(lock.withLock { readEnds.last })
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&descriptor, 1, 5000) == 1, "the inhibitor was not released")
    }
}
