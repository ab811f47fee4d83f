import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

@testable import KeywellCore

/// Reads a live process's memory the way an attacker with root would: every mapping listed in
/// /proc/<pid>/maps, through /proc/<pid>/mem.
struct LiveProcessMemory {
    let pid: pid_t

    /// A small scanner run as its own process (root reads any process's memory): every line of
    /// /proc/<pid>/maps, read through /proc/<pid>/mem; a mapping that cannot be read is skipped.
    static let scanner = """
        import sys
        pid, needle = int(sys.argv[1]), bytes.fromhex(sys.argv[2])
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for line in maps:
                start, end = (int(x, 16) for x in line.split()[0].split("-"))
                try:
                    mem.seek(start)
                    if needle in mem.read(end - start):
                        print(line.strip())
                except (OSError, OverflowError, ValueError):
                    pass
        """

    /// Names of the mappings holding `needle` (empty when it is nowhere).
    func mappings(containing needle: [UInt8]) throws -> [String] {
        let hex = needle.map { String(format: "%02x", $0) }.joined()
        let scan = try ChildProcess(executable: "/usr/bin/python3", arguments: ["-c", Self.scanner, "\(pid)", hex])
        let output = try scan.wait(timeout: .seconds(120))
        guard output.termination.exitCode == 0 else { throw TestSupportError("memory scanner failed: \(output.standardErrorText)") }
        return output.standardOutputText.split(separator: "\n").map(String.init)
    }

    func statusField(_ name: String) throws -> String? {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        return status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
            .map { $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces) }
    }
}

/// The daemon's memory, files and log while it holds secrets (issue: "Secrets in memory and on disk").
@Suite(.serialized) struct SecretsInMemoryTests {
    @Test func lockingLeavesNoMasterKeyInTheDaemon() throws {
        let fixture = try DaemonFixture()
        let password = "memscan-password-\(UUID().uuidString)"
        let path = try fixture.createKeychain("memscan", password: password)
        var marker = [UInt8](repeating: 0, count: 32)
        for index in marker.indices { marker[index] = UInt8.random(in: 0...255) }
        try fixture.add(["class": "genp", "acct": "scan", "u_Keychain": "memscan", "v_Data": .bytes(marker)])
        let found = try fixture.copyMatching(["class": "genp", "acct": "scan", "u_Keychain": "memscan", "r_Data": true])
        #expect(found.first?["v_Data"]?.bytesValue == marker)

        // The master key, worked out here from the file and the password.
        let header = try KeychainDatabase(opening: path).readHeader()
        let key = try header.unwrapMasterKey(password: SecretBytes(copying: Array(password.utf8)))
        let keyBytes = key.withUnsafeBytes { Array($0) }
        #expect(keyBytes.count == 32)

        let memory = LiveProcessMemory(pid: try fixture.daemonPID())
        // While unlocked the key is in the daemon (which shows that the scan can find it) and
        // sits in locked pages.
        let whileUnlocked = try memory.mappings(containing: keyBytes)
        #expect(!whileUnlocked.isEmpty, "the scan found no master key in an unlocked daemon")
        let locked = try #require(try memory.statusField("VmLck"))
        #expect(Int(locked.split(separator: " ").first ?? "0") ?? 0 > 0, "VmLck is \(locked)")

        try fixture.call("Lock", ["memscan"])
        #expect(try fixture.info("memscan")["locked"] == true)
        let afterLock = try memory.mappings(containing: keyBytes)
        #expect(afterLock.isEmpty, "master key still in the daemon after Lock: \(afterLock)")

        // Reported rather than required: libdbus's message buffers and freed Swift buffers are
        // not ours to wipe.
        let markerAfterLock = try memory.mappings(containing: marker)
        let passwordAfterLock = try memory.mappings(containing: Array(password.utf8))
        print("memscan: after Lock, secret marker in \(markerAfterLock.count) mapping(s) \(markerAfterLock); password in \(passwordAfterLock.count) \(passwordAfterLock)")
    }

    @Test func secretsAndPasswordsStayOutOfTheLogAndTheFiles() throws {
        let fixture = try DaemonFixture()
        let password = "log-password-\(UUID().uuidString)"
        let secretText = "log-secret-\(UUID().uuidString)"
        try fixture.createKeychain("login", password: password)
        try fixture.add(["class": "genp", "acct": "a", "svce": "s", "v_Data": .bytes(Array(secretText.utf8))])
        _ = try fixture.copyMatching(["class": "genp", "acct": "a", "r_Data": true])
        try fixture.call("Lock", ["login"])
        try fixture.call("Unlock", ["login", .bytes(Array(password.utf8))])
        // A wrong password is logged as a failure, never as the text typed.
        #expect(throws: DBusError.self) { try fixture.call("Unlock", ["login", .bytes(Array("wrong-\(password)".utf8))]) }
        try fixture.call("ChangePassword", ["login", .bytes(Array(password.utf8)), .bytes(Array((password + "-new").utf8))])
        _ = try fixture.copyMatching(["class": "genp", "acct": "a", "r_Data": true])

        let log = fixture.daemonLog
        #expect(!log.isEmpty, "the verbose log was captured")
        for needle in [password, secretText] {
            #expect(!log.contains(needle), "\(needle.prefix(12)) in the daemon log")
        }
        // Every file of the session: keychains, WAL, settings, runtime folder, the log.
        let enumerator = FileManager.default.enumerator(atPath: fixture.bus.directory.path)
        while let relative = enumerator?.nextObject() as? String {
            let file = fixture.bus.directory.path + "/" + relative
            var info = stat()
            guard lstat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            guard let bytes = FileManager.default.contents(atPath: file) else { continue }
            for needle in [password, secretText] {
                #expect(bytes.range(of: Data(needle.utf8)) == nil, "\(needle.prefix(12)) in \(relative)")
            }
        }
    }
}
