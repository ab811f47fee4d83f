import Testing

@testable import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// The one way to start a child: what it inherits, its pipes, and reaping a stubborn one.
@Suite struct ChildSpawnerTests {
    private func shell(_ script: String, input: SpawnRequest.Input = .nullDevice) throws -> SpawnedChild {
        try ChildSpawner.spawn(SpawnRequest(executable: "/bin/sh", arguments: ["-c", script], environment: ["PATH": "/usr/bin:/bin"],
                                            standardInput: input, standardOutput: .pipe))
    }

    private func output(of child: SpawnedChild) -> String {
        let text = String(decoding: ChildSpawner.readToEnd(child.standardOutput!), as: UTF8.self)
        try? child.standardOutput!.close()
        _ = ChildSpawner.waitForExit(child.pid)
        return text
    }

    @Test func aDescriptorOpenHereWithoutCloseOnExecDoesNotReachTheChild() throws {
        let file = open("/dev/null", O_RDONLY)  // no O_CLOEXEC: as a careless library would open it
        #expect(file >= 0)
        let leaked: Int32 = 100
        #expect(dup2(file, leaked) == leaked)
        defer { close(file); close(leaked) }
        let child = try shell("if [ -e /proc/self/fd/\(leaked) ]; then echo leaked; else echo closed; fi")
        #expect(output(of: child) == "closed\n")
    }

    @Test func theChildStartsWithDefaultSignalsAndAnEmptyMask() throws {
        // Like the daemon: SIGPIPE ignored and SIGTERM blocked in this thread.
        let previous = signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, previous) }
        var blocked = sigset_t(), saved = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &blocked, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        let child = try shell("grep -E '^(SigIgn|SigBlk):' /proc/self/status")
        let lines = output(of: child).split(separator: "\n")
        func mask(_ name: String) -> UInt64? {
            lines.first { $0.hasPrefix(name) }.flatMap { UInt64($0.split(separator: "\t").last ?? "", radix: 16) }
        }
        let ignored = try #require(mask("SigIgn:"))
        let blockedInChild = try #require(mask("SigBlk:"))
        #expect(ignored & (1 << UInt64(SIGPIPE - 1)) == 0, "SIGPIPE still ignored")
        #expect(blockedInChild == 0)
    }

    @Test func standardInputAndOutputPipesCarryBytesBothWays() throws {
        let child = try shell("tr a-z A-Z", input: .pipe)
        let input = Array("pinentry line\n".utf8)
        #expect(input.withUnsafeBytes { write(child.standardInput!.rawValue, $0.baseAddress, $0.count) } == input.count)
        try? child.standardInput!.close()
        #expect(output(of: child) == "PINENTRY LINE\n")
    }

    @Test func ourPipeEndsAreCloseOnExec() throws {
        let child = try shell("cat", input: .pipe)
        defer {
            try? child.standardInput!.close()
            _ = output(of: child)
        }
        for fd in [child.standardInput!, child.standardOutput!] {
            #expect(fcntl(fd.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        }
    }

    @Test func aMissingProgramIsAClearError() {
        let error = #expect(throws: SpawnError.self) {
            _ = try ChildSpawner.spawn(SpawnRequest(executable: "/nonexistent/program", environment: [:]))
        }
        #expect(error?.description.contains("cannot start /nonexistent/program") == true)
    }

    @Test func reapKillsAChildThatIgnoresTermination() throws {
        // Says "ready" once the trap is set, so SIGTERM cannot arrive before it.
        let child = try shell("trap '' TERM; echo ready; while :; do sleep 1; done")
        var byte: UInt8 = 0
        #expect(read(child.standardOutput!.rawValue, &byte, 1) == 1)
        ChildSpawner.reap(child.pid, terminateAfter: .milliseconds(50), killAfter: .milliseconds(200))
        try? child.standardOutput!.close()
        var status: Int32 = 0
        #expect(waitpid(child.pid, &status, WNOHANG) == -1 && errno == ECHILD)
    }
}
