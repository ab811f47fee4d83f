import Foundation
import KeywellCore

/// What a password dialog shows.
struct PasswordRequest: Sendable {
    var title: String
    var description: String
    var prompt: String
    /// For a new password: the label of the second entry that must match.
    var confirmation: String?
}

enum PasswordAnswer {
    case password(SecretBytes)
    /// The person cancelled, closed the dialog, or it timed out.
    case cancelled
    /// No dialog could be shown (no pinentry, it crashed, it spoke nonsense).
    case failed(String)
}

/// One dialog session that may ask several times (a wrong password, several keychains).
protocol PasswordConversation: AnyObject, Sendable {
    /// `error` is shown above the entry (a wrong password last time).
    func ask(_ request: PasswordRequest, error: String?) -> PasswordAnswer
    /// Ends the dialog from another thread; a pending `ask` answers `.cancelled`.
    func cancel()
    func finish()
}

/// Starts password dialogs.
protocol PasswordAsking: Sendable {
    func beginConversation(windowID: String) throws(PinentryError) -> any PasswordConversation
    /// Why no dialog can be shown now; nil when one can.
    func unavailableReason() -> String?
}

struct PinentryError: Error, CustomStringConvertible {
    let description: String
}

/// Password dialogs through `pinentry`, the standard Linux passphrase program, spoken to in the
/// Assuan protocol over its stdin and stdout. Which program: `PrompterChoice`, asked for each
/// dialog (docs/prompts.md).
struct Pinentry: PasswordAsking {
    let choice: PrompterChoice
    /// Seconds before an unanswered dialog gives up (pinentry's SETTIMEOUT).
    var timeout = 300

    func beginConversation(windowID: String) throws(PinentryError) -> any PasswordConversation {
        switch choice.choose() {
        case .pinentry(let program, let arguments, let environment):
            let conversation = try PinentryConversation(program: program, arguments: arguments, environment: environment)
            conversation.configure(windowID: windowID, timeout: timeout)
            return conversation
        case .unavailable(let reason):
            throw PinentryError(description: reason)
        }
    }

    func unavailableReason() -> String? {
        if case .unavailable(let reason) = choice.choose() { return reason }
        return nil
    }
}

/// One running pinentry process.
final class PinentryConversation: PasswordConversation, @unchecked Sendable {
    private let pid: pid_t
    private let toPinentry: Int32
    private let fromPinentry: Int32
    private var buffered: [UInt8] = []
    private let state = NSLock()
    private var cancelled = false
    private var reaped = false

    init(program: String, arguments: [String] = [], environment: [String: String] = [:]) throws(PinentryError) {
        var input: [Int32] = [-1, -1]
        var output: [Int32] = [-1, -1]
        guard pipe(&input) == 0 else { throw PinentryError(description: "pipe: \(String(cString: strerror(errno)))") }
        guard pipe(&output) == 0 else {
            close(input[0]); close(input[1])
            throw PinentryError(description: "pipe: \(String(cString: strerror(errno)))")
        }
        // Our ends must not leak into other children the daemon starts.
        for descriptor in [input[0], input[1], output[0], output[1]] { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // The daemon blocks SIGTERM and ignores SIGPIPE; pinentry must get both back.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        sigaddset(&defaults, SIGTERM)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { _, given in given }
        let envp: [UnsafeMutablePointer<CChar>?] = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawnp(&child, program, &actions, &attributes, argv, envp)
        close(input[0])
        close(output[1])
        guard status == 0 else {
            close(input[1]); close(output[0])
            throw PinentryError(description: "cannot start \(program): \(String(cString: strerror(status)))")
        }
        pid = child
        toPinentry = input[1]
        fromPinentry = output[0]
        guard let greeting = readLine(), greeting.hasPrefix("OK") else {
            finish()
            throw PinentryError(description: "\(program) did not greet with OK (is it a pinentry?)")
        }
    }

    deinit { finish() }

    func configure(windowID: String, timeout: Int) {
        if !windowID.isEmpty, windowID.allSatisfy(\.isNumber) || windowID.hasPrefix("0x") {
            _ = command("OPTION parent-wid=\(windowID)")
        }
        _ = command("SETTIMEOUT \(timeout)")
    }

    func ask(_ request: PasswordRequest, error: String?) -> PasswordAnswer {
        if isCancelled { return .cancelled }
        for (verb, text) in [("SETTITLE", request.title), ("SETDESC", request.description), ("SETPROMPT", request.prompt)] {
            guard command("\(verb) \(Self.escape(text))") != nil else { return endedAnswer() }
        }
        if let error { _ = command("SETERROR \(Self.escape(error))") }
        if let confirmation = request.confirmation {
            // Older pinentries do not know SETREPEAT: they then ask once.
            _ = command("SETREPEAT \(Self.escape(confirmation))")
            _ = command("SETREPEATERROR \(Self.escape("The passwords do not match."))")
        }
        guard send("GETPIN") else { return endedAnswer() }
        var pin: [UInt8] = []
        defer { pin.withUnsafeMutableBufferPointer { buffer in for index in buffer.indices { buffer[index] = 0 } } }
        while let line = readLine() {
            if line.hasPrefix("D ") {
                pin += Self.unescape(line.utf8.dropFirst(2))
            } else if line == "OK" || line.hasPrefix("OK ") {
                return .password(SecretBytes(copying: pin))
            } else if line.hasPrefix("ERR") {
                return .cancelled
            } else if line.hasPrefix("INQUIRE") {
                guard send("CAN") else { break }
            }
            // "S …" status and "#" comment lines carry nothing we need.
        }
        return endedAnswer()
    }

    func cancel() {
        let running = state.withLock { () -> Bool in
            cancelled = true
            return !reaped
        }
        if running { kill(pid, SIGTERM) }
    }

    func finish() {
        let first = state.withLock { () -> Bool in
            defer { reaped = true }
            return !reaped
        }
        guard first else { return }
        _ = send("BYE")
        close(toPinentry)
        close(fromPinentry)
        // A pinentry that ignores BYE and the closed pipe gets killed after a second.
        var status: Int32 = 0
        for attempt in 0..<100 {
            if waitpid(pid, &status, WNOHANG) != 0 { return }
            if attempt == 50 { kill(pid, SIGTERM) }
            usleep(20_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
    }

    private var isCancelled: Bool { state.withLock { cancelled } }

    private func endedAnswer() -> PasswordAnswer {
        isCancelled ? .cancelled : .failed("pinentry stopped answering")
    }

    /// Sends a command and waits for OK (the line) or ERR (nil).
    func command(_ line: String) -> String? {
        guard send(line) else { return nil }
        while let reply = readLine() {
            if reply.hasPrefix("OK") { return reply }
            if reply.hasPrefix("ERR") { return nil }
        }
        return nil
    }

    func send(_ line: String) -> Bool {
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(toPinentry, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    func readLine() -> String? {
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 1024)
            let count = read(fromPinentry, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            buffered += chunk[..<count]
        }
    }

    /// Assuan lines may not hold %, CR or LF: they travel as %XX.
    static func escape(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "%": escaped += "%25"
            case "\n": escaped += "%0A"
            case "\r": escaped += "%0D"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    static func unescape(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var result: [UInt8] = []
        var iterator = Array(bytes)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%"), iterator.count >= 2,
               let value = UInt8(String(decoding: iterator.prefix(2), as: UTF8.self), radix: 16) {
                result.append(value)
                iterator = iterator.dropFirst(2)
            } else {
                result.append(byte)
            }
        }
        return result
    }
}
