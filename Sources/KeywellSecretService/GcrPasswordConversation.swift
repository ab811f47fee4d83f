import KeywellCore
import KeywellDBus
import KeywellIdentity
import KeywellSystem

/// Password dialogs in GNOME's own dialog (docs/prompts.md, "GNOME's dialog"): gcr's password
/// prompt, the password coming back encrypted through gcr's secret exchange. One prompt for the
/// whole conversation, as gnome-keyring keeps one: a wrong password is asked again in the same
/// window, with a warning above the entry.
final class GcrPasswordConversation: PasswordConversation, @unchecked Sendable {
    // @unchecked: `prompt` is used by the one asking thread; `cancel` only withdraws it (thread-safe).
    private let prompt: GcrSystemPrompt
    private let windowID: String

    /// Starts the prompter and waits until it is ready for our dialog (after any other
    /// client's); throws when no dialog can be shown this way.
    init(on connection: DBusConnection, identities: ApplicationIdentities, timeoutSeconds: Int, windowID: String) throws(GcrPromptError) {
        prompt = try GcrSystemPrompt(on: connection, deadline: deadline(after: .seconds(max(timeoutSeconds, 1))), identities: identities)
        self.windowID = windowID
        switch prompt.next() {
        case .ready: return
        case .timedOut: prompt.finish(); throw GcrPromptError("gcr's prompter stayed busy with another dialog")
        case .withdrawn, .done, .gone: prompt.finish(); throw GcrPromptError("gcr's prompter stopped before showing the dialog")
        }
    }

    func ask(_ request: PasswordRequest, error: String?) -> PasswordAnswer {
        typealias Property = GcrPrompterNames.Property
        var properties: [(String, DBusValue)] = [
            (Property.title, .string(request.title)),
            (Property.message, .string(request.title)),
            (Property.description, .string(request.description)),
            (Property.warning, .string(error ?? "")),
            (Property.passwordNew, .bool(request.confirmation != nil)),
            (Property.choiceLabel, .string("")),
            (Property.callerWindow, .string(windowID)),
        ]
        if let ok = request.okButton { properties.append((Property.continueLabel, .string(ok))) }
        if let cancel = request.cancelButton { properties.append((Property.cancelLabel, .string(cancel))) }
        do {
            try prompt.perform(type: GcrPrompterNames.passwordType, properties: properties)
        } catch {
            return .failed(error.description)
        }
        switch prompt.next() {
        case .ready(GcrPrompterNames.replyYes, _, let exchange):
            do {
                guard let secret = try prompt.secret(in: exchange) else { return .failed("gcr's prompter sent no password") }
                return .password(secret)
            } catch {
                return .failed(error.description)
            }
        case .timedOut: return .timedOut
        case .ready, .done, .withdrawn: return .cancelled
        case .gone: return .failed("gcr's prompter exited")
        }
    }

    func cancel() { prompt.withdraw() }

    func finish() { prompt.finish() }
}

/// What password dialogs need to use gcr's prompter: the bus served now and who is on it.
struct GcrPasswords: Sendable {
    let connection: @Sendable () -> DBusConnection?
    let identities: ApplicationIdentities
}
