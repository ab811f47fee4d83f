import Foundation
import KeywellTestSupport
import Testing

@testable import KeywellIdentity

/// A pinned process is read through its own /proc folder and pidfd: once it is gone, the pin
/// says so instead of reading whatever process gets the pid next.
@Suite("Pinning a process")
struct ProcessPinTests {
    /// A `sleep 1000` that has finished starting: its command line is sleep's (a child caught
    /// before its exec would still be the test process).
    private func startedSleep() throws -> ChildProcess {
        let child = try ChildProcess(executable: "/bin/sleep", arguments: ["1000"])
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOfFile: "/proc/\(child.pid)/cmdline", encoding: .utf8)) ?? ""
            if text == "/bin/sleep\u{0}1000\u{0}" { return child }
            usleep(1000)
        }
        child.kill()
        throw TestSupportError("sleep never started")
    }

    @Test func aPinnedProcessThatExitsIsNoticedAndNotReadAgain() throws {
        let child = try startedSleep()
        let pin = try ProcessPin(pid: child.pid, pidfd: nil)
        let commandLine = try pin.read("cmdline", limit: 4096).bytes
        #expect(String(decoding: commandLine, as: UTF8.self) == "/bin/sleep\u{0}1000\u{0}")
        child.kill()
        _ = try child.wait()
        #expect(throws: IdentityError.raced) { try pin.checkAlive() }
        // The folder opened at pinning time does not follow the pid to a newcomer.
        #expect(throws: IdentityError.self) { try pin.read("cmdline", limit: 4096) }
        // A pid that no longer names a process cannot be pinned.
        #expect(throws: IdentityError.raced) { try ProcessPin(pid: child.pid, pidfd: nil) }
    }

    @Test func aProgramWhosePathCannotBeNamedUnambiguouslyHasNoIdentity() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        for name in ["sl;eep", "sl\neep"] {
            let path = folder.subpath(name)
            try FileManager.default.copyItem(atPath: "/bin/sleep", toPath: path)
            let child = try ChildProcess(executable: path, arguments: ["1000"])
            defer { child.kill(); _ = try? child.wait() }
            let deadline = ContinuousClock.now + .seconds(30)
            while (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(child.pid)/exe")) != path,
                  ContinuousClock.now < deadline { usleep(1000) }
            let pin = try ProcessPin(pid: child.pid, pidfd: nil)
            #expect(throws: IdentityError.self, "\(name.debugDescription)") {
                try IdentityResolver(runtimeDirectory: nil).identify(pin, securityLabel: nil)
            }
        }
    }

    @Test func theExecutableIsReadAsItRuns() throws {
        let child = try startedSleep()
        defer { child.kill(); _ = try? child.wait() }
        let pin = try ProcessPin(pid: child.pid, pidfd: nil)
        let identity = try IdentityResolver(runtimeDirectory: nil).identify(pin, securityLabel: nil)
        let path = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(child.pid)/exe")
        guard case .executable(let found, _, nil) = identity.kind else {
            Issue.record("sleep was identified as \(identity.string)")
            return
        }
        #expect(found == path)
        #expect(identity.displayName == "sleep")
    }

    @Test func aProgramOnlyRootCanReplaceIsItsPathAndACopyBelowTmpIsItsHash() throws {
        let system = try startedSleep()
        defer { system.kill(); _ = try? system.wait() }
        let systemPath = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(system.pid)/exe")
        let digests = FileDigest()
        let resolver = IdentityResolver(runtimeDirectory: nil, digests: digests)
        let named = try resolver.identify(try ProcessPin(pid: system.pid, pidfd: nil), securityLabel: nil)
        #expect(named.string == (try ExpectedProgramIdentity.of(systemPath)))

        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let copy = folder.subpath("sleep")
        try FileManager.default.copyItem(atPath: systemPath, toPath: copy)
        let copied = try ChildProcess(executable: copy, arguments: ["1000"])
        defer { copied.kill(); _ = try? copied.wait() }
        let deadline = ContinuousClock.now + .seconds(30)
        while (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(copied.pid)/exe")) != copy,
              ContinuousClock.now < deadline { usleep(1000) }
        let hashed = try resolver.identify(try ProcessPin(pid: copied.pid, pidfd: nil), securityLabel: nil)
        #expect(hashed.string == (try ExpectedProgramIdentity.of(copy)))
        #expect(hashed.string.hasPrefix("exe:\(copy);sha256="))
        #expect(digests.filesHashed == (ExpectedProgramIdentity.isRootOnly(systemPath) ? 1 : 2))
    }
}
