import Foundation
import KeywellCore
import KeywellProtocol

/// The work of gnome-keyring's `ChangeWithPrompt` (Seahorse's "Change Password"): asks for the
/// keychain's current password and unlocks with it, as gnome-keyring does (so a wrong one is
/// told at once, under the guessing throttle, five tries), then asks for the new one twice and
/// changes it. Completes with an empty string, as gnome-keyring's change prompt does.
struct ChangePasswordPrompt {
    let context: ServiceContext
    let requester: String?

    /// True once the password is changed; false when dismissed or failed.
    func run(_ name: String, _ prompt: PromptContext) -> Bool {
        let who = requester.map { "\($0) wants" } ?? "An application wants"
        guard let old = currentPassword(name, who: who, prompt) else { return false }
        let request = PasswordRequest(
            title: "Change Keychain Password",
            description: "\(who) to change the password of the keychain “\(name)”.\nChoose the new password.",
            prompt: "New password:", confirmation: "Confirm:")
        switch prompt.ask(request) {
        case .password(let new):
            do throws(KeychainError) {
                try context.store.locking.changePassword(name, old: old, new: new)
                context.logger.info("changed the password of keychain \"\(name)\" through a Secret Service prompt")
                return true
            } catch {
                context.logger.error("cannot change the password of \"\(name)\": \(error.wireMessage)")
                return false
            }
        case .cancelled, .timedOut:
            return false
        case .failed(let reason):
            context.logger.error("no password dialog for \"\(name)\": \(reason) (set KEYWELL_PINENTRY to a pinentry program)")
            return false
        }
    }

    /// The current password, checked by unlocking with it; nil when the person gave up.
    private func currentPassword(_ name: String, who: String, _ prompt: PromptContext) -> SecretBytes? {
        var complaint: String?
        for _ in 0..<UnlockPrompt.attempts {
            let request = PasswordRequest(
                title: "Change Keychain Password",
                description: "\(who) to change the password of the keychain “\(name)”.\nEnter its current password.",
                prompt: "Current password:")
            switch prompt.ask(request, error: complaint) {
            case .password(let password):
                do throws(KeychainError) {
                    try context.store.locking.unlock(name, password: password)
                    return password
                } catch where error.status == SecStatus.authFailed {
                    complaint = UnlockPrompt.complaint(about: error)
                    if !PasswordThrottle.isRefusal(error) {
                        context.logger.notice("wrong password for keychain \"\(name)\" in a change-password prompt")
                    }
                } catch {
                    context.logger.error("cannot check the password of \"\(name)\": \(error.wireMessage)")
                    return nil
                }
            case .cancelled, .timedOut:
                return nil
            case .failed(let reason):
                context.logger.error("no password dialog for \"\(name)\": \(reason) (set KEYWELL_PINENTRY to a pinentry program)")
                return nil
            }
        }
        return nil
    }
}
