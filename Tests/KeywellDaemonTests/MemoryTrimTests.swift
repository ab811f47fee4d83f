import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

@testable import KeywellDaemon

/// Giving library pages back must never change what a process computes.
@Suite struct MemoryTrimTests {
    @Test func trimmingThisVeryProcessKeepsItWorking() throws {
        let before = ProcessMemory.residentKiB()
        let dropped = ResidentMemoryTrim.apply()
        #expect(dropped > 0)
        #expect(ProcessMemory.residentKiB() < before)
        // Code and read-only data come back from the files on first touch.
        let text = (0..<1000).map { "item \($0)" }.joined(separator: ",")
        #expect(text.split(separator: ",").count == 1000)
        let json = try JSONSerialization.data(withJSONObject: ["a": [1, 2, 3]])
        #expect(try JSONSerialization.jsonObject(with: json) as? [String: [Int]] == ["a": [1, 2, 3]])
        #expect(String(format: "%05.1f", 3.14159) == "003.1")
    }

    /// A read-only file mapping goes whether or not a page of it was resident when smaps was
    /// read (the parse itself may fault some in), and when its file's pages are dirty in the
    /// page cache (a program just installed); written, writable and anonymous ones never.
    @Test func everyUnwrittenReadOnlyFileMappingIsDroppedResidentOrNot() {
        let smaps = """
            7f0000000000-7f0000004000 r-xp 00000000 fe:00 2250    /usr/lib/libcold.so
            Size:                 16 kB
            Rss:                   0 kB
            Private_Dirty:         0 kB
            Anonymous:             0 kB
            AnonHugePages:         0 kB
            VmFlags: rd ex mr mw me
            7f0000004000-7f0000006000 r--p 00004000 fe:00 2250    /usr/lib/libcold.so
            Rss:                   8 kB
            Private_Dirty:         8 kB
            Anonymous:             8 kB
            7f0000006000-7f0000007000 rw-p 00006000 fe:00 2250    /usr/lib/libcold.so
            Rss:                   4 kB
            7f0000010000-7f0000014000 r-xp 00000000 fe:00 2251    /usr/lib/libwarm.so
            Rss:                  12 kB
            Private_Dirty:        12 kB
            Anonymous:             0 kB
            7f0000018000-7f000001c000 r--p 00000000 fe:00 3000    /home/u/.local/share/keywell/keychains/login.keychain-db
            Rss:                  16 kB
            7f0000020000-7f0000030000 r--p 00000000 00:00 0
            Rss:                  64 kB
            7f0000030000-7f0000031000 r--p 00000000 00:00 0    [vvar]
            Rss:                   4 kB

            """
        typealias Eligible = ResidentMemoryTrim.Eligible
        let expected: [Eligible] = [
            Eligible(start: 0x7f00_0000_0000, length: 0x4000, residentKiB: 0),
            Eligible(start: 0x7f00_0001_0000, length: 0x4000, residentKiB: 12),
            Eligible(start: 0x7f00_0001_8000, length: 0x4000, residentKiB: 16),
        ]
        let found = ResidentMemoryTrim.eligibleMappings(smaps)
        #expect(found == expected)
    }

    @Test func theDaemonTrimsWhenIdleAndServesAfterwards() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        try fixture.add(genp("before", ["v_Data": secret("one")]))
        try waitUntil(timeout: .seconds(20)) { fixture.daemonLog.contains("idle: gave back") }
        try fixture.add(genp("after", ["v_Data": secret("two")]))
        #expect(try fixture.copyMatching(genp("before", ["r_Data": true])) == [["v_Data": secret("one")]])
        try fixture.call("Lock", ["login"])
        try fixture.call("Unlock", ["login", secret("pw")])
        #expect(try fixture.copyMatching(genp("after", ["r_Data": true])) == [["v_Data": secret("two")]])
    }

    /// A burst of calls gives the library pages back at the first quiet step after it, not ten seconds
    /// later; a few calls do not, and everything works afterwards.
    @Test func aBurstTrimsEverythingAtItsFirstQuietStep() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        try fixture.add(genp("first", ["v_Data": secret("one")]))
        try waitUntil(timeout: .seconds(20)) { fixture.daemonLog.contains("idle: gave back") }
        #expect(!fixture.daemonLog.contains("burst: gave back"))
        for index in 0..<IdleTrimmer.burstCalls {
            try fixture.add(genp("burst \(index)", ["v_Data": secret("value \(index)")]))
        }
        try waitUntil(timeout: .seconds(20)) { fixture.daemonLog.contains("burst: gave back") }
        #expect(fixture.daemonLog.components(separatedBy: "idle: gave back").count == 2)
        #expect(try fixture.copyMatching(genp("burst 7", ["r_Data": true])) == [["v_Data": secret("value 7")]])
    }

    /// A lock gives back at once what the unlocked keychain made resident, without waiting for
    /// the idle period; the keychain works as before once unlocked.
    @Test func aLockTrimsAtOnceAndTheKeychainWorksAfterwards() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        try fixture.add(genp("kept", ["v_Data": secret("one")]))
        try fixture.call("Lock", ["login"])
        try waitUntil(timeout: .seconds(30)) { fixture.daemonLog.contains("lock: gave back") }
        try fixture.call("Unlock", ["login", secret("pw")])
        #expect(try fixture.copyMatching(genp("kept", ["r_Data": true])) == [["v_Data": secret("one")]])
        try fixture.add(genp("new", ["v_Data": secret("two")]))
        #expect(try fixture.copyMatching(genp("new", ["r_Data": true])) == [["v_Data": secret("two")]])
    }
}

enum ProcessMemory {
    static func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
    }
}
