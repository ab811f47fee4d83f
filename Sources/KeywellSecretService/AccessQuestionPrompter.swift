import KeywellAccess
import KeywellDBus
import KeywellSystem
import Logging
import Synchronization

/// Access questions (docs/access-control.md "The question") through the same dialogs as
/// password prompts: the pinentry `PrompterChoice` picks, one process per question, as a
/// three-button confirmation. The answer is read by the error number `CONFIRM` returns, never
/// by its text: `OK` is Allow, the NOTOK button's error is Always Allow, anything else Deny.
public final class PinentryAccessQuestions: AccessQuestionAsking, Sendable {
    /// GPG_ERR_NOT_CONFIRMED (114) from GPG_ERR_SOURCE_PINENTRY (5 << 24): the NOTOK button.
    static let notConfirmed = 83_886_194

    private let environment: [String: String]
    private let logger: Logger
    /// The bus the activation environment is read from (the daemon's current one), not kept alive by us.
    private let connection = Mutex(WeakConnection())

    private struct WeakConnection {
        weak var connection: DBusConnection?
    }

    public init(environment: [String: String], logger: Logger) {
        self.environment = environment
        self.logger = logger
    }

    /// The bus whose activation environment may name the display (a new one on each reconnect).
    public func use(_ connection: DBusConnection) { self.connection.withLock { $0.connection = connection } }

    public func ask(_ question: AccessQuestion, timeoutSeconds: Int) -> AccessAnswer {
        ask(question, timeoutSeconds: timeoutSeconds, withdrawal: AccessWithdrawal())
    }

    /// Withdrawing stops the pinentry (SIGTERM): its closed pipe ends `CONFIRM` as Deny.
    public func ask(_ question: AccessQuestion, timeoutSeconds: Int, withdrawal: AccessWithdrawal) -> AccessAnswer {
        let current = connection.withLock { $0.connection }
        let choice = PrompterChoice(environment: environment) { current?.activationEnvironment() ?? [:] }
        switch choice.choose() {
        case .unavailable(let reason):
            logger.notice("access question for \(question.caller.identityString ?? "an unidentified program") not shown, answered Deny: \(reason)")
            return .deny
        case .pinentry(let program, let arguments, let environment):
            let conversation: PinentryConversation
            do {
                conversation = try PinentryConversation(program: program, arguments: arguments, environment: environment)
            } catch {
                logger.notice("access question not shown, answered Deny: \(error.description)")
                return .deny
            }
            defer { conversation.finish() }
            conversation.configure(windowID: "", timeout: timeoutSeconds)
            return withdrawal.whileShowing({ conversation.confirm(question) }, stop: { conversation.cancel() })
        }
    }
}

extension PinentryConversation {
    /// Shows the question with Allow, Always Allow (when offered) and Deny, and reads the answer.
    func confirm(_ question: AccessQuestion) -> AccessAnswer {
        var settings = [
            ("SETTITLE", AccessQuestion.title), ("SETDESC", question.description),
            ("SETOK", AccessQuestion.allowButton), ("SETCANCEL", AccessQuestion.denyButton),
        ]
        if question.offersAlwaysAllow { settings.append(("SETNOTOK", AccessQuestion.alwaysAllowButton)) }
        for (verb, text) in settings {
            guard command("\(verb) \(Self.escape(text))") != nil else { return .deny }
        }
        guard send("CONFIRM") else { return .deny }
        while let line = readLine() {
            if line == "OK" || line.hasPrefix("OK ") { return .allowOnce }
            if line.hasPrefix("ERR") {
                let code = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
                return code == PinentryAccessQuestions.notConfirmed && question.offersAlwaysAllow ? .alwaysAllow : .deny
            }
            if line.hasPrefix("INQUIRE") { guard send("CAN") else { break } }
            // "S …" status and "#" comment lines carry nothing we need.
        }
        return .deny
    }
}
