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
}

/// Owns org.freedesktop.login1 on its own bus, answers Inhibit with a pipe's write end, and
/// sends PrepareForSleep.
final class FakeLogind: @unchecked Sendable {
    let bus: PrivateSessionBus
    let connection: DBusConnection
    private let lock = NSLock()
    private var readEnds: [Int32] = []

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
            lock.withLock { readEnds.append(ends[0]) }
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
