#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What to start, and where its standard streams go (docs/design.md, "Child processes").
///
/// Whatever the caller has open, the child gets only fds 0–2 and `extraDescriptors`; it starts
/// with an empty signal mask and default handling of the signals a daemon blocks or ignores.
/// Secrets never go in `arguments` or `environment` (other users can read both in /proc):
/// they travel over a pipe.
package struct SpawnRequest: Sendable {
    package enum Input: Sendable {
        case nullDevice
        /// A pipe whose write end `SpawnedChild.standardInput` holds.
        case pipe
        /// The same as ours (a program that asks the person at our terminal: `ssh-keygen -p`).
        case inherit
    }

    package enum Output: Sendable {
        case nullDevice
        /// A pipe whose read end the `SpawnedChild` holds.
        case pipe
        /// Appended to a file, created (0600) when missing.
        case appendToFile(String)
        /// Our own descriptor (e.g. 2: the child's stdout goes to our stderr).
        case descriptor(Int32)
        /// For stderr only: wherever the child's stdout goes.
        case standardOutput
        /// The same as ours.
        case inherit
    }

    /// A path, or a name looked up in this process's PATH.
    package var executable: String
    package var arguments: [String]
    /// The child's whole environment.
    package var environment: [String: String]
    package var standardInput: Input
    package var standardOutput: Output
    package var standardError: Output
    /// The child's descriptor number → ours.
    package var extraDescriptors: [Int32: Int32]
    package var workingDirectory: String?
    /// A process group of its own (so that a signal to the group reaches what it starts).
    package var newProcessGroup: Bool

    package init(executable: String, arguments: [String] = [], environment: [String: String],
                 standardInput: Input = .nullDevice, standardOutput: Output = .nullDevice,
                 standardError: Output = .nullDevice, extraDescriptors: [Int32: Int32] = [:],
                 workingDirectory: String? = nil, newProcessGroup: Bool = false) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.standardInput = standardInput
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.extraDescriptors = extraDescriptors
        self.workingDirectory = workingDirectory
        self.newProcessGroup = newProcessGroup
    }
}

/// A started child: its pid and our ends of the pipes asked for (close-on-exec, ours to close).
package struct SpawnedChild: Sendable {
    package let pid: pid_t
    package let standardInput: FileDescriptor?
    package let standardOutput: FileDescriptor?
    package let standardError: FileDescriptor?
}

package struct SpawnError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// How a child ended.
package struct ChildExit: Sendable, Equatable, CustomStringConvertible {
    /// The exit status, or nil when a signal ended the process.
    package let exitCode: Int32?
    package let signal: Int32?

    package init(waitStatus status: Int32) {
        let signal = status & 0x7f
        exitCode = signal == 0 ? (status >> 8) & 0xff : nil
        self.signal = signal == 0 ? nil : signal
    }

    package var succeeded: Bool { exitCode == 0 }
    /// The shell's convention: the exit status, or 128 + the signal.
    package var shellStatus: Int32 { exitCode ?? 128 + (signal ?? 0) }
    package var description: String { exitCode.map { "exit \($0)" } ?? "signal \(signal ?? 0)" }
}

/// The one way Keywell starts a child process: posix_spawn, so the child has exec'd (or failed
/// to) when `spawn` returns, and no code runs between fork and exec.
package enum ChildSpawner {
    /// Signals the child gets back to their default handling (the daemon blocks SIGTERM and
    /// ignores SIGPIPE; test and bench processes ignore SIGPIPE).
    static let defaultSignals = [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM]

    package static func spawn(_ request: SpawnRequest) throws(SpawnError) -> SpawnedChild {
        var ours: [Int32] = []     // our pipe ends, returned
        var theirs: [Int32] = []   // the child's pipe ends, closed here after the spawn
        func closeAll() { (ours + theirs).forEach { _ = close($0) } }
        func makePipe() throws(SpawnError) -> (read: Int32, write: Int32) {
            do {
                return try ChildSpawner.makePipe()
            } catch {
                closeAll()
                throw error
            }
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }

        var inputEnd: Int32?
        switch request.standardInput {
        case .nullDevice:
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .pipe:
            let fds = try makePipe()
            ours.append(fds.write); theirs.append(fds.read)
            inputEnd = fds.write
            posix_spawn_file_actions_adddup2(&actions, fds.read, 0)
        case .inherit:
            break
        }
        var outputEnds: [Int32: Int32] = [:]
        for (target, output) in [(Int32(1), request.standardOutput), (Int32(2), request.standardError)] {
            switch output {
            case .nullDevice:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            case .pipe:
                let fds = try makePipe()
                ours.append(fds.read); theirs.append(fds.write)
                outputEnds[target] = fds.read
                posix_spawn_file_actions_adddup2(&actions, fds.write, target)
            case .appendToFile(let path):
                posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            case .descriptor(let source):
                posix_spawn_file_actions_adddup2(&actions, source, target)
            case .standardOutput:
                if target == 2 { posix_spawn_file_actions_adddup2(&actions, 1, 2) }
            case .inherit:
                break
            }
        }
        for (target, source) in request.extraDescriptors.sorted(by: { $0.key < $1.key }) {
            posix_spawn_file_actions_adddup2(&actions, source, target)
        }
        if let workingDirectory = request.workingDirectory {
            guard let addChdir = GNUExtensions.addChdir else {
                closeAll()
                throw SpawnError("this C library cannot change a spawned child's directory")
            }
            _ = addChdir(&actions, workingDirectory)
        }
        // Only 0–2 and the extra descriptors reach the child, whatever this process has open.
        let firstUnused = max(3, (request.extraDescriptors.keys.max() ?? 2) + 1)
        if let closeFrom = GNUExtensions.addCloseFrom { _ = closeFrom(&actions, firstUnused) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        if request.newProcessGroup {
            flags |= Int32(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in defaultSignals { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)

        let argv = [request.executable] + request.arguments
        let environment = request.environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let status = withCStringArray(argv) { argvPointer in
            withCStringArray(environment) { envPointer in
                request.executable.contains("/")
                    ? posix_spawn(&pid, request.executable, &actions, &attributes, argvPointer, envPointer)
                    : posix_spawnp(&pid, request.executable, &actions, &attributes, argvPointer, envPointer)
            }
        }
        theirs.forEach { _ = close($0) }
        theirs = []
        guard status == 0 else {
            closeAll()
            throw SpawnError("cannot start \(request.executable): \(String(cString: strerror(status)))")
        }
        return SpawnedChild(pid: pid, standardInput: inputEnd.map(FileDescriptor.init(rawValue:)),
                            standardOutput: outputEnds[1].map(FileDescriptor.init(rawValue:)),
                            standardError: outputEnds[2].map(FileDescriptor.init(rawValue:)))
    }

    /// A pipe created close-on-exec atomically, so that it cannot leak into a child another
    /// thread spawns at the same moment.
    package static func makePipe() throws(SpawnError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard GNUExtensions.makePipe(&fds) == 0 else { throw SpawnError("pipe: \(String(cString: strerror(errno)))") }
        return (fds[0], fds[1])
    }

    /// Runs a program to its end and returns its exit and all it wrote to the stdout pipe
    /// (`standardOutput` is made `.pipe`).
    package static func runToEnd(_ request: SpawnRequest) throws(SpawnError) -> (exit: ChildExit?, output: [UInt8]) {
        var request = request
        request.standardOutput = .pipe
        let child = try spawn(request)
        let output = readToEnd(child.standardOutput!)
        try? child.standardOutput!.close()
        try? child.standardInput?.close()
        return (waitForExit(child.pid), output)
    }

    /// Reads a descriptor until end of file (or an error).
    package static func readToEnd(_ fd: FileDescriptor) -> [UInt8] {
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { (try? fd.read(into: $0)) ?? 0 }
            if count == 0 { return output }
            output += buffer[0..<count]
        }
    }

    /// Waits for `pid` to end (retrying when a signal interrupts the wait).
    package static func waitForExit(_ pid: pid_t) -> ChildExit? {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return nil }
        }
        return ChildExit(waitStatus: status)
    }

    /// Reaps a child that was asked to end: SIGTERM if it still runs after `terminateAfter`,
    /// SIGKILL if it still runs after `killAfter`. Polls, as nothing else may reap it.
    package static func reap(_ pid: pid_t, terminateAfter: Duration = .seconds(1), killAfter: Duration = .seconds(2)) {
        let poll: Duration = .milliseconds(20)
        let start = monotonicNanoseconds()
        var terminated = false
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result != 0 && !(result < 0 && errno == EINTR) { return }
            let waited = monotonicNanoseconds() &- start
            if waited >= killAfter.saturatingNanoseconds { break }
            if !terminated, waited >= terminateAfter.saturatingNanoseconds {
                kill(pid, SIGTERM)
                terminated = true
            }
            usleep(UInt32(poll.saturatingNanoseconds / 1000))
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
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
