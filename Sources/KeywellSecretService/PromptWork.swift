import Foundation
import KeywellCore
import KeywellProtocol

/// The work of an Unlock prompt: asks for each locked keychain's password and unlocks it.
struct UnlockPrompt {
    let context: ServiceContext
    /// Who asked, for the dialog's text.
    let requester: String?
    /// Wrong passwords tolerated per keychain before the prompt gives up (dismissed).
    static let attempts = 5

    /// The keychains that are unlocked when it ends; empty when dismissed.
    func run(_ keychains: [String], _ prompt: PromptContext) -> Set<String> {
        var opened = Set<String>()
        for name in keychains {
            guard unlock(name, prompt) else { return [] }
            opened.insert(name)
        }
        return opened
    }

    private func unlock(_ name: String, _ prompt: PromptContext) -> Bool {
        var complaint: String?
        for _ in 0..<Self.attempts {
            // Unlocked meanwhile (another prompt, the CLI, PAM): nothing to ask.
            if (try? context.store.locking.isLocked(name)) == false { return true }
            let who = requester.map { "\($0) wants" } ?? "An application wants"
            let request = PasswordRequest(
                title: "Unlock Keychain",
                description: "\(who) to use the keychain “\(name)”, which is locked.\nEnter the keychain’s password to unlock it.",
                prompt: "Password:")
            switch prompt.ask(request, error: complaint) {
            case .password(let password):
                do throws(KeychainError) {
                    try context.store.locking.unlock(name, password: password)
                    context.keychainUnlocked(name, password)
                    context.logger.info("unlocked keychain \"\(name)\" through a Secret Service prompt")
                    return true
                } catch where error.status == SecStatus.authFailed {
                    complaint = Self.complaint(about: error)
                    if !PasswordThrottle.isRefusal(error) {
                        context.logger.notice("wrong password for keychain \"\(name)\" in a Secret Service prompt")
                    }
                } catch let failure {
                    context.logger.error("cannot unlock \"\(name)\": \(failure.wireMessage)")
                    prompt.noteFailure("the keychain “\(name)” could not be unlocked: \(failure.wireMessage)")
                    return false
                }
            case .cancelled, .timedOut:
                return false
            case .failed(let reason):
                context.logger.error("no password dialog for \"\(name)\": \(reason) (docs/prompts.md)")
                prompt.noteFailure("no password dialog could be shown: \(reason)")
                return false
            }
        }
        prompt.noteFailure("\(Self.attempts) wrong passwords for the keychain “\(name)”")
        return false
    }

    /// What the dialog says after a failed try; the throttle's wait, when there is one, in its words.
    static func complaint(about error: KeychainError) -> String {
        let wait = error.detail.flatMap { detail in
            // From the end: a keychain's name may hold "; " too.
            detail.range(of: "; ", options: .backwards).map { String(detail[$0.upperBound...]) }
        }
        if PasswordThrottle.isRefusal(error) {
            return "Too many wrong passwords: the password was not checked; \(wait ?? "try again later")."
        }
        return "The password you entered is not correct." + (wait.map { " \($0.prefix(1).uppercased())\($0.dropFirst())." } ?? "")
    }
}

/// The work of a CreateCollection prompt: asks for the new keychain's password (twice) and makes
/// the keychain (KeychainCreation).
struct NewKeychainPrompt {
    let context: ServiceContext
    let requester: String?

    func run(name: String, label: String, alias: String, _ prompt: PromptContext) -> CollectionID? {
        let who = requester.map { "\($0) wants" } ?? "An application wants"
        let request = PasswordRequest(
            title: "New Keychain",
            description: "\(who) to create the keychain “\(name)”.\nChoose a password for it.",
            prompt: "Password:", confirmation: "Confirm:")
        switch prompt.ask(request) {
        case .password(let password):
            do throws(KeychainError) {
                return try KeychainCreation(context: context).make(name: name, label: label, alias: alias, password: password)
            } catch {
                context.logger.error("cannot create keychain \"\(name)\": \(error.wireMessage)")
                prompt.noteFailure("the keychain “\(name)” could not be made: \(error.wireMessage)")
                return nil
            }
        case .cancelled, .timedOut:
            return nil
        case .failed(let reason):
            context.logger.error("no password dialog to create \"\(name)\": \(reason) (docs/prompts.md)")
            prompt.noteFailure("no password dialog could be shown: \(reason)")
            return nil
        }
    }
}
