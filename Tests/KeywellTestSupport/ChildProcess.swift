import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A spawned program with captured output, for tests of the daemon, the CLI and PAM.
///
/// stdin is the given bytes (then EOF) or /dev/null; stdout and stderr are read continuously on
/// background threads so a chatty child never blocks on a full pipe. The child starts with
/// default signal handling and an empty signal mask, and inherits only fds 0–2 (plus any
/// `extraFileDescriptors`). If the object is dropped while the child runs, the child is killed.
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

        let stdoutPipe = try makePipe()
        let stderrPipe = try makePipe()
        let stdinPipe = try standardInput.map { _ in try makePipe() }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdinPipe {
            posix_spawn_file_actions_adddup2(&actions, stdinPipe.read, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe.write, 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe.write, 2)
        for (target, source) in extraFileDescriptors.sorted(by: { $0.key < $1.key }) {
            posix_spawn_file_actions_adddup2(&actions, source, target)
        }
        if let workingDirectory {
            guard let addChdir = GNUExtensions.addChdir else { throw TestSupportError("posix_spawn cannot change directory here") }
            _ = addChdir(&actions, workingDirectory)
        }
        // Only 0–2 and the extra descriptors reach the child, whatever this process has open.
        let firstUnused = (extraFileDescriptors.keys.max() ?? 2) + 1
        if let closeFrom = GNUExtensions.addCloseFrom { _ = closeFrom(&actions, max(3, firstUnused)) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        if newProcessGroup {
            flags |= Int32(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)

        let argv = [executable] + arguments
        let environmentPairs = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var childPID: pid_t = 0
        let status = SpawnGate.withLock {
            withCStringArray(argv) { argvPointer in
                withCStringArray(environmentPairs) { envPointer in
                    executable.contains("/")
                        ? posix_spawn(&childPID, executable, &actions, &attributes, argvPointer, envPointer)
                        : posix_spawnp(&childPID, executable, &actions, &attributes, argvPointer, envPointer)
                }
            }
        }
        close(stdoutPipe.write)
        close(stderrPipe.write)
        if let stdinPipe { close(stdinPipe.read) }
        guard status == 0 else {
            close(stdoutPipe.read)
            close(stderrPipe.read)
            if let stdinPipe { close(stdinPipe.write) }
            throw TestSupportError("Cannot start \(executable): \(String(cString: strerror(status)))")
        }
        pid = childPID

        state.startReader(fd: stdoutPipe.read, isStandardOutput: true)
        state.startReader(fd: stderrPipe.read, isStandardOutput: false)
        if let stdinPipe, let standardInput { ChildState.startWriter(fd: stdinPipe.write, bytes: standardInput) }
        state.startWaiter(pid: childPID)
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
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            let signal = status & 0x7f
            let termination = signal == 0
                ? ChildProcess.Termination(exitCode: (status >> 8) & 0xff, signal: nil)
                : ChildProcess.Termination(exitCode: nil, signal: signal)
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

func makePipe() throws -> (read: Int32, write: Int32) {
    var fds: [Int32] = [0, 0]
    // O_CLOEXEC at creation: a pipe must not leak into children spawned concurrently.
    guard GNUExtensions.makePipe(&fds) == 0 else { throw TestSupportError("pipe2 failed: \(String(cString: strerror(errno)))") }
    return (fds[0], fds[1])
}

private func withCStringArray<T>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> T) -> T {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for pointer in pointers { free(pointer) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// glibc functions that Swift's Glibc module hides behind _GNU_SOURCE, looked up at run time.
private enum GNUExtensions {
    typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32

    static let addChdir: AddChdir? = lookUp("posix_spawn_file_actions_addchdir_np")
    static let addCloseFrom: AddCloseFrom? = lookUp("posix_spawn_file_actions_addclosefrom_np")
    private static let pipe2: Pipe2? = lookUp("pipe2")

    /// pipe2(O_CLOEXEC): created close-on-exec atomically, so a pipe cannot leak into a child
    /// spawned concurrently by another thread.
    static func makePipe(_ fds: UnsafeMutablePointer<Int32>) -> Int32 {
        if let pipe2 { return pipe2(fds, O_CLOEXEC) }
        guard pipe(fds) == 0 else { return -1 }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        return 0
    }

    private static func lookUp<T>(_ name: String) -> T? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: T.self)
    }
}
