import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSystem

/// What a password dialog shows.
struct PasswordRequest: Sendable {
    var title: String
    var description: String
    var prompt: String
    /// For a new password: the label of the second entry that must match.
    var confirmation: String? = nil
    /// The buttons' words when not the dialog's own (OK, Cancel).
    var okButton: String? = nil
    var cancelButton: String? = nil
}

enum PasswordAnswer {
    case password(SecretBytes)
    /// The person cancelled or closed the dialog.
    case cancelled
    /// Nobody answered within the dialog's timeout.
    case timedOut
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
    private let toPinentry: FileDescriptor
    /// Only the asking thread reads them.
    var replies: AssuanReplies
    private let state = Protected<(cancelled: Bool, reaped: Bool)>((false, false))

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
        replies = AssuanReplies(fd: child.standardOutput!)
        guard let greeting = replies.readLine(), greeting.hasPrefix("OK") else {
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
        for (verb, text) in [("SETOK", request.okButton), ("SETCANCEL", request.cancelButton)] {
            if let text { _ = command("\(verb) \(Self.escape(text))") }
        }
        if let confirmation = request.confirmation {
            // Older pinentries do not know SETREPEAT: they then ask once.
            _ = command("SETREPEAT \(Self.escape(confirmation))")
            _ = command("SETREPEATERROR \(Self.escape("The passwords do not match."))")
        }
        guard send("GETPIN") else { return endedAnswer() }
        switch replies.pin(cancelInquiry: { send("CAN") }) {
        case .entered(let pin): return .password(pin)
        case .cancelled(PinentryErrorCode.timedOut?): return .timedOut
        case .cancelled: return .cancelled
        case .ended: return endedAnswer()
        }
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
        try? toPinentry.close()
        try? replies.fd.close()
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
        while let reply = replies.readLine() {
            if reply.hasPrefix("OK") { return reply }
            if reply.hasPrefix("ERR") { return nil }
        }
        return nil
    }

    func send(_ line: String) -> Bool {
        (try? toPinentry.writeAll(Array((line + "\n").utf8))) != nil
    }

    /// Assuan lines may not hold %, CR or LF: they travel as %XX.
    static func escape(_ text: String) -> String { AssuanReplies.escape(text) }

    static func unescape(_ bytes: some Collection<UInt8>) -> [UInt8] { AssuanReplies.unescape(bytes) }
}
