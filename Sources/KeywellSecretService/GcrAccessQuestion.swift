import KeywellAccess
import KeywellDBus
import KeywellIdentity
import KeywellSystem

/// An access question in GNOME's own dialog (docs/prompts.md, "GNOME's dialog"): gcr's confirm
/// prompt with Allow and Deny as its buttons and Always Allow as its check box, unticked.
/// Allow with the box ticked answers Always Allow; Deny is Deny either way.
enum GcrAccessQuestion {
    /// The answer, or why the dialog could not be shown at all (the caller then tries pinentry).
    /// Once the dialog was shown, every outcome is an answer: closed, timed out and withdrawn
    /// are Deny.
    static func ask(_ question: AccessQuestion, on connection: DBusConnection, identities: ApplicationIdentities,
                    timeoutSeconds: Int, withdrawal: AccessWithdrawal?) -> Result<AccessReply, GcrPromptError> {
        let prompt: GcrSystemPrompt
        do {
            prompt = try GcrSystemPrompt(on: connection, deadline: deadline(after: .seconds(max(timeoutSeconds, 1))),
                                         identities: identities)
        } catch {
            return .failure(error)
        }
        defer { prompt.finish() }
        guard let withdrawal else { return converse(question, prompt) }
        return withdrawal.whileShowing({ converse(question, prompt) }, stop: { prompt.withdraw() })
    }

    /// The dialog's properties: its words from `AccessQuestion`, no caller window (a daemon has none).
    static func properties(of question: AccessQuestion) -> [(String, DBusValue)] {
        typealias Property = GcrPrompterNames.Property
        var properties: [(String, DBusValue)] = [
            (Property.title, .string(AccessQuestion.title)),
            (Property.message, .string(question.heading)),
            (Property.description, .string(question.description(alwaysAllowAsChoice: question.offersAlwaysAllow))),
            (Property.continueLabel, .string(AccessQuestion.allowButton)),
            (Property.cancelLabel, .string(AccessQuestion.denyButton)),
        ]
        if question.offersAlwaysAllow {
            properties.append((Property.choiceLabel, .string(AccessQuestion.alwaysAllowChoice)))
            properties.append((Property.choiceChosen, .bool(false)))
        }
        return properties
    }

    private static func converse(_ question: AccessQuestion, _ prompt: GcrSystemPrompt) -> Result<AccessReply, GcrPromptError> {
        // The prompter says it is ready (after any other client's dialog) before we may show ours.
        switch prompt.next() {
        case .ready: break
        case .withdrawn: return .success(withdrawn)
        case .timedOut: return .success(AccessReply(.deny, denial: "nobody answered the dialog in time (gcr's prompter was busy)"))
        case .done: return .failure(GcrPromptError("gcr's prompter stopped before showing the dialog"))
        case .gone: return .failure(GcrPromptError("gcr's prompter exited before showing the dialog"))
        }
        do {
            try prompt.perform(type: GcrPrompterNames.confirmType, properties: properties(of: question))
        } catch {
            return .failure(error)
        }
        switch prompt.next() {
        case .ready(GcrPrompterNames.replyYes, let chosen, _):
            if chosen == true, question.offersAlwaysAllow { return .success(AccessReply(.alwaysAllow, denial: "")) }
            return .success(AccessReply(.allowOnce, denial: ""))
        case .ready(GcrPrompterNames.replyNo, _, _): return .success(AccessReply(.deny, denial: AccessReply.answeredDeny))
        case .ready, .done: return .success(AccessReply(.deny, denial: "the dialog was closed without an answer"))
        case .gone: return .success(AccessReply(.deny, denial: AccessReply.noDialog("gcr's prompter exited")))
        case .withdrawn: return .success(withdrawn)
        case .timedOut: return .success(AccessReply(.deny, denial: "nobody answered the dialog in time"))
        }
    }

    private static let withdrawn = AccessReply(.deny, denial: "the question was withdrawn before an answer")
}
