import KeywellAccess
import KeywellDBus
import KeywellIdentity
import KeywellProtocol
import KeywellSystem
import Logging

/// Access questions (docs/access-control.md "The question") through the dialog `PrompterChoice`
/// picks: GNOME's own (gcr's system prompter, `GcrAccessQuestion`) where it is on the session
/// bus, else the pinentry password prompts use, one process per question, as a three-button
/// confirmation. A pinentry's answer is read by the error number `CONFIRM` returns, never by
/// its text: `OK` is Allow, the NOTOK button's error is Always Allow, anything else Deny.
public final class PinentryAccessQuestions: AccessQuestionAsking, Sendable {
    private let environment: [String: String]
    /// The display the session told keywelld (`keywell session-display`).
    private let sessionDisplay: LearnedSessionDisplay
    private let logger: Logger
    /// Who owns gcr's prompter name: only a root-only program is believed.
    private let identities: ApplicationIdentities
    /// The bus the activation environment is read from (the daemon's current one), not kept alive by us.
    private let connection = Protected(WeakConnection())

    private struct WeakConnection {
        weak var connection: DBusConnection?
    }

    public init(environment: [String: String], sessionDisplay: LearnedSessionDisplay = LearnedSessionDisplay(), logger: Logger,
                identities: ApplicationIdentities) {
        self.environment = environment
        self.sessionDisplay = sessionDisplay
        self.logger = logger
        self.identities = identities
    }

    /// How the next question would be shown, decided afresh each time: gcr's prompter where it is
    /// on the current bus, and the display from the daemon's environment, then the session's
    /// display, then the activation environment of the current bus.
    func prompterChoice(on current: DBusConnection?) -> PrompterChoice {
        PrompterChoice(environment: environment, sessionDisplay: { [sessionDisplay] in sessionDisplay.environment },
                       activationEnvironment: { current?.activationEnvironment() ?? [:] },
                       systemPrompter: { .on(current) })
    }

    /// The bus whose activation environment may name the display (a new one on each reconnect).
    public func use(_ connection: DBusConnection) { self.connection.withLock { $0.connection = connection } }

    /// Whether a question could be shown now, and by what or why not (`keywell doctor`'s
    /// `access questions` line): the choice `reply(to:)` would make.
    public func dialogNow() -> (canAsk: Bool, dialog: String, reason: String) {
        let choice = prompterChoice(on: connection.withLock { $0.connection })
        switch choice.choose() {
        case .systemPrompter:
            return (true, "GNOME's dialog (gcr's system prompter, \(GcrPrompterNames.busName)), with Always Allow as its check box", "")
        case .pinentry(let program, _, let environment):
            // KEYWELL_PINENTRY is taken as given: a name that runs nothing is answered Deny too.
            guard let found = choice.resolve(program) else {
                return (false, "", "\(PrompterChoice.pinentryVariable)=\(program) in keywelld's environment is not a program it can run")
            }
            // A display learned from the session, or from the activation environment, is passed on.
            let shown = ["DISPLAY", "WAYLAND_DISPLAY"].compactMap { name in environment[name].map { "\(name)=\($0)" } }
            return (true, shown.isEmpty ? found : "\(found) (\(shown.joined(separator: ", ")) passed to it)", "")
        case .unavailable(let reason):
            return (false, "", reason)
        }
    }

    public func ask(_ question: AccessQuestion, timeoutSeconds: Int) -> AccessAnswer {
        reply(to: question, timeoutSeconds: timeoutSeconds, withdrawal: nil).answer
    }

    public func ask(_ question: AccessQuestion, timeoutSeconds: Int, withdrawal: AccessWithdrawal) -> AccessAnswer {
        reply(to: question, timeoutSeconds: timeoutSeconds, withdrawal: withdrawal).answer
    }

    /// Withdrawing stops the pinentry (SIGTERM): its closed pipe ends `CONFIRM` as Deny.
    public func reply(to question: AccessQuestion, timeoutSeconds: Int, withdrawal: AccessWithdrawal?) -> AccessReply {
        let current = connection.withLock { $0.connection }
        let choice = prompterChoice(on: current)
        var outcome = choice.choose()
        if case .systemPrompter = outcome, let current {
            switch GcrAccessQuestion.ask(question, on: current, identities: identities, timeoutSeconds: timeoutSeconds, withdrawal: withdrawal) {
            case .success(let reply): return reply
            case .failure(let error):
                // GNOME's dialog could not be shown (no display for it, say): a pinentry may be.
                logger.warning("access question: \(error.description); trying a pinentry")
                outcome = choice.choose(systemPrompter: false)
            }
        }
        switch outcome {
        case .systemPrompter:
            return AccessReply(.deny, denial: AccessReply.noDialog("keywelld is not on the session bus"))
        case .unavailable(let reason):
            return AccessReply(.deny, denial: AccessReply.noDialog(reason))
        case .pinentry(let program, let arguments, let environment):
            let conversation: PinentryConversation
            do {
                conversation = try PinentryConversation(program: program, arguments: arguments, environment: environment)
            } catch {
                return AccessReply(.deny, denial: AccessReply.noDialog(error.description))
            }
            defer { conversation.finish() }
            conversation.configure(windowID: "", timeout: timeoutSeconds)
            guard let withdrawal else { return conversation.confirm(question) }
            return withdrawal.whileShowing({ conversation.confirm(question) }, stop: { conversation.cancel() })
        }
    }
}

extension PinentryConversation {
    /// Shows the question with Allow, Always Allow (when offered) and Deny, and reads the answer.
    func confirm(_ question: AccessQuestion) -> AccessReply {
        let stopped = AccessReply(.deny, denial: AccessReply.noDialog("the pinentry stopped answering"))
        var settings = [
            ("SETTITLE", AccessQuestion.title), ("SETDESC", question.description),
            ("SETOK", AccessQuestion.allowButton), ("SETCANCEL", AccessQuestion.denyButton),
        ]
        if question.offersAlwaysAllow { settings.append(("SETNOTOK", AccessQuestion.alwaysAllowButton)) }
        for (verb, text) in settings {
            guard command("\(verb) \(Self.escape(text))") != nil else { return stopped }
        }
        guard send("CONFIRM") else { return stopped }
        switch replies.confirmation(cancelInquiry: { send("CAN") }) {
        case .confirmed?: return AccessReply(.allowOnce, denial: "")
        case .refused(PinentryErrorCode.notConfirmed?, _)? where question.offersAlwaysAllow:
            return AccessReply(.alwaysAllow, denial: "")
        case .refused(PinentryErrorCode.cancelled?, _)?: return AccessReply(.deny, denial: AccessReply.answeredDeny)
        case .refused(PinentryErrorCode.timedOut?, _)?: return AccessReply(.deny, denial: "nobody answered the dialog in time")
        case .refused(_, let line)?: return AccessReply(.deny, denial: AccessReply.noDialog("the pinentry answered \(line.prefix(120))"))
        case nil: return stopped
        }
    }
}
