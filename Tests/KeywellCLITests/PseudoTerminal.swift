import Foundation
import KeywellTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// keywell run with a pseudo-terminal as its controlling terminal and stdin/stdout/stderr
/// (util-linux `setsid -c` makes it the controlling tty), so its password prompts take the
/// /dev/tty path. The test reads what the terminal shows from the master side and types there.
// @unchecked: used by the one test thread that drives the terminal.
final class PseudoTerminalRun: @unchecked Sendable {
    private let master: Int32
    private let child: ChildProcess
    /// Everything the terminal showed so far: prompts, and any echo of what was typed.
    private(set) var transcript: [UInt8] = []
    /// Where the next `waitFor` starts looking: just after what the last one found.
    private var cursor = 0

    init(_ session: CLISession, _ arguments: [String]) throws {
        var master: Int32 = -1, slave: Int32 = -1
        guard openpty(&master, &slave, nil, nil, nil) == 0 else { throw TestSupportError("openpty failed") }
        // Not inherited by processes other tests spawn meanwhile (they would keep the pty open).
        _ = fcntl(master, F_SETFD, FD_CLOEXEC)
        _ = fcntl(slave, F_SETFD, FD_CLOEXEC)
        self.master = master
        defer { close(slave) }
        child = try ChildProcess(executable: "/usr/bin/setsid", arguments: ["-w", "-c", session.keywell] + arguments,
                                 environment: session.environment, extraFileDescriptors: [0: slave, 1: slave, 2: slave])
    }

    deinit { close(master) }

    var text: String { String(decoding: transcript, as: UTF8.self) }

    /// Whether the terminal echoes typing now (the pty's settings, read from the master side).
    var echoIsOn: Bool {
        var settings = termios()
        guard tcgetattr(master, &settings) == 0 else { return false }
        return settings.c_lflag & tcflag_t(ECHO) != 0
    }

    /// keywell's pid (`setsid` execs it in place: it is not a process group leader here).
    var pid: pid_t { child.pid }

    /// Reads until the terminal shows `expected` after what earlier waits found, or time runs out.
    func waitFor(_ expected: String, timeout: Duration = .seconds(30)) throws {
        let deadline = ContinuousClock.now + timeout
        let needle = Array(expected.utf8)
        while true {
            if let found = Self.find(needle, in: transcript, from: cursor) {
                cursor = found + needle.count
                return
            }
            guard ContinuousClock.now < deadline else {
                throw TestSupportError("terminal never showed \(expected.debugDescription); it showed \(text.debugDescription)")
            }
            guard readSome(timeoutMilliseconds: 200) else {
                throw TestSupportError("terminal closed before \(expected.debugDescription); it showed \(text.debugDescription)")
            }
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= haystack.count {
            if haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }

    func type(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    /// Waits for the exit, collecting what the terminal shows until then.
    func finish(timeout: Duration = .seconds(30)) throws -> ChildProcess.Termination {
        let deadline = ContinuousClock.now + timeout
        while child.isRunning, ContinuousClock.now < deadline {
            _ = readSome(timeoutMilliseconds: 100)
        }
        let termination = try child.wait(timeout: .seconds(5)).termination
        while readSome(timeoutMilliseconds: 50) {}
        return termination
    }

    /// false at end of input (EIO once the child side is closed).
    private func readSome(timeoutMilliseconds: Int32) -> Bool {
        var poller = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, timeoutMilliseconds)
        if ready == 0 { return true }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(master, &buffer, buffer.count)
        if count <= 0 { return false }
        transcript += buffer[0..<count]
        return true
    }
}
