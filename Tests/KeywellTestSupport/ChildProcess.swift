import Foundation
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// A spawned program with captured output, for tests of the daemon, the CLI and PAM.
///
/// stdin is the given bytes (then EOF) or /dev/null; stdout and stderr are read continuously on
/// background threads so a chatty child never blocks on a full pipe. The child starts with
/// default signal handling and an empty signal mask, and inherits only fds 0–2 (plus any
/// `extraFileDescriptors`). If the object is dropped while the child runs, the child is killed.
// @unchecked: immutable after init; what changes lives in ChildState.
public final class ChildProcess: @unchecked Sendable {
    public struct Termination: Sendable, Equatable, CustomStringConvertible {
        /// The exit status, or nil when a signal ended the process.
        public let exitCode: Int32?
        public let signal: Int32?
        public var succeeded: Bool { exitCode == 0 }
        public var description: String { exitCode.map { "exit \($0)" } ?? "signal \(signal ?? 0)" }
    }

    public struct Output: Sendable, CustomStringConvertible {
        public let termination: Termination
        public let standardOutput: [UInt8]
        public let standardError: [UInt8]
        public var standardOutputText: String { String(decoding: standardOutput, as: UTF8.self) }
        public var standardErrorText: String { String(decoding: standardError, as: UTF8.self) }
        public var description: String {
            "\(termination); stdout: \(standardOutputText.debugDescription); stderr: \(standardErrorText.debugDescription)"
        }
    }

    public let pid: pid_t
    public let executable: String
    private let state: ChildState

    /// Starts `executable` (a path, or a name looked up in this process's PATH).
    /// `environment` nil inherits this process's environment.
    public init(executable: String, arguments: [String] = [], environment: [String: String]? = nil,
                standardInput: [UInt8]? = nil, workingDirectory: String? = nil, newProcessGroup: Bool = false,
                extraFileDescriptors: [Int32: Int32] = [:]) throws {
        ChildState.ignoreSIGPIPEOnce
        self.executable = executable
        let state = ChildState()
        self.state = state

        let request = SpawnRequest(
            executable: executable, arguments: arguments, environment: environment ?? ProcessInfo.processInfo.environment,
            standardInput: standardInput == nil ? .nullDevice : .pipe, standardOutput: .pipe, standardError: .pipe,
            extraDescriptors: extraFileDescriptors, workingDirectory: workingDirectory, newProcessGroup: newProcessGroup)
        let child: SpawnedChild
        do {
            child = try SpawnGate.withLock { () throws(SpawnError) -> SpawnedChild in try ChildSpawner.spawn(request) }
        } catch {
            throw TestSupportError("\(error)")
        }
        pid = child.pid

        state.startReader(fd: child.standardOutput!.rawValue, isStandardOutput: true)
        state.startReader(fd: child.standardError!.rawValue, isStandardOutput: false)
        if let input = child.standardInput, let standardInput { ChildState.startWriter(fd: input.rawValue, bytes: standardInput) }
        state.startWaiter(pid: child.pid)
    }

    deinit {
        if state.termination == nil { _ = Glibc.kill(pid, SIGKILL) }
    }

    /// Runs a program to completion; on timeout kills it and throws (with what it printed).
    public static func run(_ executable: String, arguments: [String] = [], environment: [String: String]? = nil,
                           standardInput: [UInt8]? = nil, workingDirectory: String? = nil,
                           timeout: Duration = .seconds(60)) throws -> Output {
        let child = try ChildProcess(executable: executable, arguments: arguments, environment: environment,
                                     standardInput: standardInput, workingDirectory: workingDirectory)
        do {
            return try child.wait(timeout: timeout)
        } catch {
            child.kill()
            _ = try? child.wait(timeout: .seconds(5))
            throw error
        }
    }

    public var isRunning: Bool { state.termination == nil }
    public var termination: Termination? { state.termination }

    /// Waits for the exit and returns the output. Throws on timeout (the child keeps running).
    /// Output written by grandchildren that keep the pipes open is collected for at most
    /// `outputGrace` after the exit.
    public func wait(timeout: Duration = .seconds(60), outputGrace: Duration = .seconds(2)) throws -> Output {
        guard let termination = state.waitForTermination(timeout: timeout) else {
            throw TestSupportError("\(executable) (pid \(pid)) still running after \(timeout); output so far: "
                                   + "stdout \(String(decoding: state.output(true), as: UTF8.self).debugDescription), "
                                   + "stderr \(String(decoding: state.output(false), as: UTF8.self).debugDescription)")
        }
        state.waitForEndOfOutput(timeout: outputGrace)
        return Output(termination: termination, standardOutput: state.output(true), standardError: state.output(false))
    }

    /// Sends `signal` to the child (or to its whole process group when it has its own),
    /// unless it has already been reaped (its pid could belong to someone else by then).
    public func kill(_ signal: Int32 = SIGKILL, group: Bool = false) {
        state.whileNotReaped { _ = Glibc.kill(group ? -pid : pid, signal) }
    }

    /// Stdout so far.
    public var standardOutputSoFar: [UInt8] { state.output(true) }
    public var standardErrorSoFar: [UInt8] { state.output(false) }

    /// Waits until stdout satisfies `condition` (e.g. a "ready" line). Throws if the child
    /// exits first or the time runs out.
    @discardableResult
    public func waitForStandardOutput(timeout: Duration = .seconds(30), until condition: ([UInt8]) -> Bool) throws -> [UInt8] {
        let deadline = ContinuousClock.now + timeout
        // Carry the change count between passes: output that lands while `condition` runs must
        // not be mistaken for "nothing new yet" (a lost wake-up).
        var seen: Int?
        while true {
            let (stdout, finished, count) = state.waitForOutputChange(after: seen, until: deadline)
            seen = count
            if condition(stdout) { return stdout }
            if finished {
                throw TestSupportError("\(executable) ended (\(state.termination.map(\.description) ?? "output closed")) before the expected output; "
                                       + "stdout \(String(decoding: stdout, as: UTF8.self).debugDescription), "
                                       + "stderr \(String(decoding: state.output(false), as: UTF8.self).debugDescription)")
            }
            if ContinuousClock.now >= deadline {
                throw TestSupportError("Timed out waiting for output of \(executable); stdout so far \(String(decoding: stdout, as: UTF8.self).debugDescription)")
            }
        }
    }
}

/// What the background threads share with the ChildProcess object.
// @unchecked: output, counters and the termination are only touched under `condition`.
private final class ChildState: @unchecked Sendable {
    /// Writing to a pipe whose reader exited must be an EPIPE error, not a dead test process.
    static let ignoreSIGPIPEOnce: Void = { signal(SIGPIPE, SIG_IGN); return () }()

    private let condition = NSCondition()
    private var stdout: [UInt8] = []
    private var stderr: [UInt8] = []
    private var openReaders = 2
    private var changeCount = 0
    private var _termination: ChildProcess.Termination?

    var termination: ChildProcess.Termination? {
        condition.lock(); defer { condition.unlock() }
        return _termination
    }

    func output(_ standardOutput: Bool) -> [UInt8] {
        condition.lock(); defer { condition.unlock() }
        return standardOutput ? stdout : stderr
    }

    func startReader(fd: Int32, isStandardOutput: Bool) {
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(fd, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                condition.lock()
                if count > 0 {
                    if isStandardOutput { stdout += buffer[0..<count] } else { stderr += buffer[0..<count] }
                } else {
                    openReaders -= 1
                }
                changeCount += 1
                condition.broadcast()
                condition.unlock()
                if count <= 0 { break }
            }
            close(fd)
        }
        thread.start()
    }

    static func startWriter(fd: Int32, bytes: [UInt8]) {
        let thread = Thread {
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if written < 0 {
                    if errno == EINTR { continue }
                    break  // the child closed its stdin
                }
                offset += written
            }
            close(fd)
        }
        thread.start()
    }

    func startWaiter(pid: pid_t) {
        let thread = Thread { [self] in
            let exit = ChildSpawner.waitForExit(pid)
            let termination = ChildProcess.Termination(exitCode: exit?.exitCode ?? -1, signal: exit?.signal)
            condition.lock()
            _termination = termination
            changeCount += 1
            condition.broadcast()
            condition.unlock()
        }
        thread.start()
    }

    func whileNotReaped(_ body: () -> Void) {
        condition.lock(); defer { condition.unlock() }
        if _termination == nil { body() }
    }

    func waitForTermination(timeout: Duration) -> ChildProcess.Termination? {
        let deadline = Date(timeIntervalSinceNow: timeout.inSeconds)
        condition.lock(); defer { condition.unlock() }
        while _termination == nil {
            if !condition.wait(until: deadline) { break }
        }
        return _termination
    }

    func waitForEndOfOutput(timeout: Duration) {
        let deadline = Date(timeIntervalSinceNow: timeout.inSeconds)
        condition.lock(); defer { condition.unlock() }
        while openReaders > 0 {
            if !condition.wait(until: deadline) { break }
        }
    }

    /// Waits for new output or the end; returns stdout and whether nothing more can come.
    /// Waits until the output changed since `seen` (returns at once when `seen` is nil), and
    /// returns stdout, whether the child is done, and the change count to pass next time.
    func waitForOutputChange(after seen: Int?, until deadline: ContinuousClock.Instant) -> ([UInt8], Bool, Int) {
        let wallDeadline = Date(timeIntervalSinceNow: (deadline - ContinuousClock.now).inSeconds)
        condition.lock(); defer { condition.unlock() }
        if let seen {
            while changeCount == seen, ContinuousClock.now < deadline {
                if !condition.wait(until: wallDeadline) { break }
            }
        }
        let finished = _termination != nil && openReaders == 0
        return (stdout, finished || (_termination != nil && ContinuousClock.now >= deadline), changeCount)
    }
}

extension Duration {
    /// Seconds as a Double (for Foundation timeouts).
    public var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
