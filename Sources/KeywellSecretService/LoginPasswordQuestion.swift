import Foundation
import KeywellCore
import KeywellProtocol

/// What the user answered when asked about a login keychain whose password they changed on
/// purpose and that the login password no longer opens (docs/login-unlock.md, "When the
/// keychain's password is not the login password").
public enum LoginPasswordDecision: Sendable, Equatable {
    /// Re-wrapped to the login password (the user proved the keychain's own password), and unlocked.
    case updated
    /// "Keep Separate": the keychain keeps its own password.
    case keptSeparate
    /// No dialog can be shown now (no display yet): ask again when one can be.
    case notAsked(String)
    /// Shown, but nobody answered in time, or it failed: ask again at the next login.
    case unanswered(String)
}

extension SecretService {
    static let loginPasswordTitle = "Login Keychain Password"
    static let loginPasswordDescription = """
        Your login keychain’s password differs from your login password, so logging in no longer \
        unlocks it.
        To unlock it at every login, update it to your login password: enter the keychain’s \
        current password. Or keep the two passwords separate.
        """
    static let updateButton = "Update Password"
    static let keepSeparateButton = "Keep Separate"

    /// Asks once, through the dialog password prompts use (docs/prompts.md), whether to re-wrap
    /// `keychain` to `loginPassword`; the update needs the keychain's current password, as
    /// macOS's "Update Keychain Password" does, checked under the guessing throttle (five tries).
    public func askToUpdateLoginKeychain(_ keychain: String, to loginPassword: SecretBytes) -> LoginPasswordDecision {
        if let reason = context.prompts.unavailableReason() { return .notAsked(reason) }
        let prompt = PromptContext(windowID: "", asker: context.prompts.asker)
        defer { prompt.finish() }
        var complaint: String?
        for _ in 0..<UnlockPrompt.attempts {
            let request = PasswordRequest(
                title: Self.loginPasswordTitle, description: Self.loginPasswordDescription, prompt: "Keychain password:",
                okButton: Self.updateButton, cancelButton: Self.keepSeparateButton)
            switch prompt.ask(request, error: complaint) {
            case .password(let old):
                do throws(KeychainError) {
                    try context.store.locking.changePassword(keychain, old: old, new: loginPassword, byLogin: true)
                    // The password just set is no guess: it opens the keychain outside the throttle.
                    try context.store.locking.unlockWithProvenPassword(keychain, password: loginPassword)
                    return .updated
                } catch where error.status == SecStatus.authFailed {
                    complaint = UnlockPrompt.complaint(about: error)
                } catch {
                    return .unanswered("the keychain could not be updated: \(error.wireMessage)")
                }
            case .cancelled:
                return .keptSeparate
            case .timedOut:
                return .unanswered("nobody answered the dialog in time")
            case .failed(let reason):
                return .unanswered("no password dialog could be shown: \(reason)")
            }
        }
        return .unanswered("\(UnlockPrompt.attempts) wrong passwords for the keychain “\(keychain)”")
    }
}
