import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// Lock on screen lock: logind's session `Lock` (a stand-in for logind on a private "system"
/// bus) and the screen savers' `ActiveChanged` on the session bus. Each spoof (a connection that
/// does not own the name sends the same signal) is handled first, the owner's signal after: the
/// order shows that the spoof was looked at and ignored.
@Suite struct ScreenLockWatcherTests {
    static let sessionPath = "/org/freedesktop/login1/session/_31"
    static let otherUsersSession = "/org/freedesktop/login1/session/_32"

    @Test func logindLockOfOurSessionLocksWhatAsksForIt() throws {
        let logind = try FakeLogind()
        try logind.addSession(Self.sessionPath, uid: getuid())
        try logind.addSession(Self.otherUsersSession, uid: getuid() &+ 4242)
        let fixture = try DaemonFixture(environment: ["DBUS_SYSTEM_BUS_ADDRESS": logind.bus.address])
        try fixture.createKeychain("login")
        try fixture.createKeychain("laptop")
        try fixture.createKeychain("desk")
        try fixture.call("SetSettings", ["desk", .stringVariantDict([KeychainInfoKey.lockOnScreenLock: false])])
        try logind.waitForInhibitor()
        try waitUntil { fixture.daemonLog.contains("watching logind for sleep") }
        let daemon = try #require(logind.inhibitorCallers.first)
        let recorder = try SignalRecorder(fixture.client)

        // A connection that does not own login1 sends Lock for our session, straight to the daemon.
        let spoofer = try logind.bus.connect()
        defer { spoofer.close() }
        try spoofer.emitSignal(path: Self.sessionPath, interface: "org.freedesktop.login1.Session", member: "Lock",
                               destination: daemon)
        let spooferName = try #require(spoofer.uniqueName)
        try waitUntil {
            recorder.all.contains(signal("KeychainLocked", "laptop"))
                || fixture.daemonLog.contains("ignored Lock from \(spooferName),")
        }
        #expect(!recorder.all.contains(signal("KeychainLocked", "laptop")), "a spoofed Lock locked the keychain")

        // logind locks another user's session: not ours.
        try logind.lockSession(Self.otherUsersSession)
        try waitUntil { fixture.daemonLog.contains("ignored Lock of \(Self.otherUsersSession)") }
        #expect(try fixture.info("laptop")["locked"] == false)

        try logind.lockSession(Self.sessionPath)
        #expect(recorder.wait(for: signal("KeychainLocked", "laptop")))
        #expect(try fixture.info("desk")["locked"] == false, "desk is set not to lock on screen lock")
        #expect(try fixture.info("login")["locked"] == false, "login does not lock on screen lock by default")
    }

    @Test(arguments: [("org.freedesktop.ScreenSaver", "/org/freedesktop/ScreenSaver"),
                      ("org.gnome.ScreenSaver", "/org/gnome/ScreenSaver")])
    func screenSaverActiveChangedFromItsOwnerLocks(name: String, path: String) throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("laptop")
        try waitUntil { fixture.daemonLog.contains("watching the screen savers for screen lock") }
        let recorder = try SignalRecorder(fixture.client)
        let screenSaver = try fixture.bus.connect()
        defer { screenSaver.close() }
        _ = try screenSaver.requestName(name, flags: [.doNotQueue])
        let spoofer = try fixture.bus.connect()
        defer { spoofer.close() }
        let spooferName = try #require(spoofer.uniqueName)

        try spoofer.emitSignal(path: path, interface: name, member: "ActiveChanged", arguments: [.bool(true)])
        try waitUntil {
            recorder.all.contains(signal("KeychainLocked", "laptop"))
                || fixture.daemonLog.contains("ignored ActiveChanged from \(spooferName), which does not own \(name)")
        }
        #expect(!recorder.all.contains(signal("KeychainLocked", "laptop")), "a spoofed ActiveChanged locked the keychain")

        // The screen saver going away (false) locks nothing; going on (true) locks.
        try screenSaver.emitSignal(path: path, interface: name, member: "ActiveChanged", arguments: [.bool(false)])
        try screenSaver.emitSignal(path: path, interface: name, member: "ActiveChanged", arguments: [.bool(true)])
        #expect(recorder.wait(for: signal("KeychainLocked", "laptop")))
        try waitUntil { fixture.daemonLog.contains("screen locked (\(name)): locked laptop") }
    }
}

extension FakeLogind {
    /// A session object whose `User` property is `uid`, as logind exports it.
    func addSession(_ path: String, uid: uid_t) throws {
        let session = DBusInterface(name: "org.freedesktop.login1.Session", signals: [DBusSignalDescription(name: "Lock")],
                                    properties: [DBusProperty(name: "User", signature: "(uo)")])
        let object = DBusClosureObject(interfaces: [session], getProperty: { name, _, _ throws(DBusError) -> DBusValue in
            guard name == "User" else { throw .unknownProperty("No property \(name)") }
            return .structure([.uint32(uid), .objectPath("/org/freedesktop/login1/user/_\(uid)")])
        }, handler: { call in
            call.reply(error: .unknownMethod("No method \(call.member)"))
        })
        try connection.register(object, at: path)
    }

    /// What `loginctl lock-session` makes logind send.
    func lockSession(_ path: String) throws {
        try connection.emitSignal(path: path, interface: "org.freedesktop.login1.Session", member: "Lock")
    }
}

/// Without a usable system bus the daemon says once, at the normal level, that lock on sleep
/// and logind's screen lock are off (someone who set them should learn why nothing happens).
@Suite struct NoSystemBusTests {
    @Test func saidOnceAtTheNormalLevel() throws {
        let fixture = try DaemonFixture(environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/system_bus_socket"])
        try fixture.createKeychain("login")
        try waitUntil { fixture.daemonLog.contains("no lock on sleep or on logind's screen lock") }
        let lines = fixture.daemonLog.split(separator: "\n").filter { $0.contains("lock on sleep") }
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.contains(" info: ") == true, "\(lines)")
    }
}
