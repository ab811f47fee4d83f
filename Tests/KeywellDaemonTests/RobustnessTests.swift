import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellSystem
import KeywellTestSupport
import Testing

/// Several clients, a daemon killed mid-write, timers.
@Suite struct RobustnessTests {
    @Test func severalClientsAtOnce() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        let clients = try (0..<8).map { _ in try fixture.bus.connect() }
        defer { clients.forEach { $0.close() } }
        let failures = LockedCounter()
        DispatchQueue.concurrentPerform(iterations: clients.count) { index in
            let client = clients[index]
            for item in 0..<25 {
                let attributes = genp("client\(index)-\(item)", ["v_Data": secret("\(index).\(item)")])
                do {
                    _ = try client.call(destination: KeywellNames.busName, path: KeywellNames.objectPath, interface: KeywellNames.interface,
                                        member: "Add", arguments: [.stringVariantDict(attributes)])
                    let found = try client.call(destination: KeywellNames.busName, path: KeywellNames.objectPath,
                                                interface: KeywellNames.interface, member: "CopyMatching",
                                                arguments: [.stringVariantDict(genp("client\(index)-\(item)", ["r_Data": true]))])
                    if found.first?.asStringVariantDictArray()?.first?["v_Data"] != secret("\(index).\(item)") { failures.increment() }
                } catch {
                    failures.increment()
                }
            }
        }
        #expect(failures.value == 0)
        #expect(try fixture.info("login")["itemCount"] == .uint32(200))
    }

    @Test func killNineLosesNoAcknowledgedItem() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        let acknowledged = LockedList()
        let writer = Thread {
            for index in 0..<100_000 {
                do {
                    try fixture.add(genp("item\(index)", ["v_Data": secret("\(index)")]))
                    acknowledged.append("item\(index)")
                } catch {
                    return  // the daemon died under us
                }
            }
        }
        writer.start()
        try waitUntil { acknowledged.count >= 50 }
        let pid = try fixture.daemonPID()
        kill(pid, SIGKILL)
        try waitUntil { !writer.isExecuting }  // it appends nothing more once it has ended
        // The next call activates a new daemon; the keychain is locked now, but attributes are readable.
        let found = try fixture.copyMatching(["class": "genp", "m_Limit": "m_LimitAll", "r_Attributes": true])
        let stored = Set(found.compactMap { $0["acct"]?.stringValue })
        let missing = acknowledged.all.filter { !stored.contains($0) }
        #expect(missing.isEmpty, "acknowledged but lost: \(missing.prefix(5))")
        #expect(try fixture.daemonPID() != pid)
    }

    @Test func idleKeychainLocksAfterItsTimeout() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        let recorder = try SignalRecorder(fixture.client)
        let clock = ContinuousClock()
        // Before any use of "short" can have happened: its lock comes at least 1 s after this.
        let beforeUse = clock.now
        try fixture.createKeychain("short")
        try fixture.call("SetSettings", ["short", .stringVariantDict(["lockAfterSeconds": .uint32(1)])])
        // How soon after the second it locks is the benchmarks' business; the wait is a hang guard.
        #expect(recorder.wait(for: signal("KeychainLocked", "short"), timeout: .seconds(30)))
        #expect(clock.now - beforeUse >= .milliseconds(950), "locked before its timeout")
        #expect(try fixture.info("short")["locked"] == true)
        #expect(try fixture.info("login")["locked"] == false, "login never locks by itself")
    }

    /// Uses 250 ms apart keep a 1 s idle timer from firing. On a busy machine a gap can grow past
    /// the second, and then a lock is right: so a lock is checked against the gap the client saw
    /// (a use that finds the keychain locked began at least 1 s after the one before it was sent),
    /// never against a wall-clock deadline.
    @Test func useRearmsTheIdleTimer() throws {
        let fixture = try DaemonFixture()
        let recorder = try SignalRecorder(fixture.client)
        let clock = ContinuousClock()
        let timeout = Duration.seconds(1)
        var lastSent = clock.now  // before every use so far: creating, adding, the setting
        try fixture.createKeychain("short")
        try fixture.add(genp("a", ["u_Keychain": "short"]))
        try fixture.call("SetSettings", ["short", .stringVariantDict(["lockAfterSeconds": .uint32(1)])])
        var uses = 0
        for _ in 0..<8 {
            usleep(250_000)
            let sent = clock.now
            do {
                _ = try fixture.copyMatching(genp("a", ["u_Keychain": "short", "r_Data": true]))
                uses += 1
            } catch {
                // Locked since the last use: only right if that use was a whole timeout ago.
                #expect(error.name == KeywellNames.errorPrefix + "InteractionNotAllowed", "\(error)")
                #expect(clock.now - lastSent >= timeout, "locked \(clock.now - lastSent) after a use")
                return
            }
            lastSent = sent
        }
        #expect(uses == 8)
        // Left alone now, it locks, and not before a whole timeout after the last use was sent.
        #expect(recorder.wait(for: signal("KeychainLocked", "short"), timeout: .seconds(30)))
        #expect(clock.now - lastSent >= timeout * 0.95)
        #expect(try fixture.info("short")["locked"] == true)
    }
}

final class LockedCounter: Sendable {
    private let count = Protected(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

final class LockedList: Sendable {
    private let items = Protected<[String]>([])
    func append(_ item: String) { items.withLock { $0.append(item) } }
    var all: [String] { items.withLock { $0 } }
    var count: Int { items.withLock { $0.count } }
}
