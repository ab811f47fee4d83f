import Foundation
import KeywellCore
import KeywellSystem
import Synchronization

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
/// Assuan protocol over its stdin and stdout, or through GNOME's own dialog
/// (`GcrPasswordConversation`) where gcr's prompter runs. Which: `PrompterChoice`, asked for
/// each dialog (docs/prompts.md).
struct Pinentry: PasswordAsking {
    let choice: PrompterChoice
    /// Seconds before an unanswered dialog gives up (pinentry's SETTIMEOUT).
    var timeout = 300
    /// GNOME's dialog, when `choice` picks it (it was made with `systemPrompter`).
    var gcr: GcrPasswords? = nil

    func beginConversation(windowID: String) throws(PinentryError) -> any PasswordConversation {
        var outcome = choice.choose()
        if case .systemPrompter = outcome, let gcr, let connection = gcr.connection() {
            do {
                return try GcrPasswordConversation(on: connection, identities: gcr.identities, timeoutSeconds: timeout, windowID: windowID)
            } catch {
                // GNOME's dialog could not be shown (no display for it, say): a pinentry may be.
                outcome = choice.choose(systemPrompter: false)
            }
        }
        switch outcome {
        case .pinentry(let program, let arguments, let environment):
            let conversation = try PinentryConversation(program: program, arguments: arguments, environment: environment)
            conversation.configure(windowID: windowID, timeout: timeout)
            return conversation
        case .unavailable(let reason):
            throw PinentryError(description: reason)
        case .systemPrompter:
            throw PinentryError(description: "keywelld is not on the session bus")
        }
    }

    func unavailableReason() -> String? {
        if case .unavailable(let reason) = choice.choose() { return reason }
        return nil
    }
}

/// One running pinentry process.
// @unchecked: `buffered` (and the pipes) belong to the one thread that asks; `cancel` from another thread touches only `state`.
final class PinentryConversation: PasswordConversation, @unchecked Sendable {
    private let pid: pid_t
    private let toPinentry: Int32
    private let fromPinentry: Int32
    private var buffered: [UInt8] = []
    private let state = Mutex<(cancelled: Bool, reaped: Bool)>((false, false))

    init(program: String, arguments: [String] = [], environment: [String: String] = [:]) throws(PinentryError) {
        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { _, given in given }
        // Both pipes carry the Assuan conversation (the password included); nothing in argv or env.
        let child: SpawnedChild
        do {
            child = try ChildSpawner.spawn(SpawnRequest(executable: program, arguments: arguments, environment: merged,
                                                        standardInput: .pipe, standardOutput: .pipe))
        } catch {
            throw PinentryError(description: error.description)
        }
        pid = child.pid
        toPinentry = child.standardInput!
        fromPinentry = child.standardOutput!
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
        let running = state.withLock { state -> Bool in
            state.cancelled = true
            return !state.reaped
        }
        if running { kill(pid, SIGTERM) }
    }

    func finish() {
        let first = state.withLock { state -> Bool in
            defer { state.reaped = true }
            return !state.reaped
        }
        guard first else { return }
        _ = send("BYE")
        close(toPinentry)
        close(fromPinentry)
        // A pinentry that ignores BYE and the closed pipe gets SIGTERM after a second, SIGKILL after two.
        ChildSpawner.reap(pid, terminateAfter: .seconds(1), killAfter: .seconds(2))
    }

    private var isCancelled: Bool { state.withLock { $0.cancelled } }

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
