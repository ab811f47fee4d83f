import KeywellDBus
import KeywellProtocol

extension ServiceContext {
    /// When no password dialog can be shown, a prompt could only ever be dismissed: the call
    /// fails at once instead, with an error that says why and what to do, and the daemon logs
    /// one line (always, not only with --verbose). `what` is the verb ("unlock", "create").
    /// The Secret Service lets any method fail; libsecret clients (secret-tool) print the
    /// error's message and exit non-zero (docs/prompts.md).
    func refuseWithoutPrompter(to what: String, _ keychains: [String], requester: String?) throws(DBusError) {
        guard let reason = prompts.unavailableReason() else { return }
        let names = keychains.map { "“\($0)”" }.joined(separator: ", ")
        let hint = what == "unlock"
            ? keychains.map { $0 == KeywellNames.loginKeychain ? "`keywell unlock-keychain`" : "`keywell unlock-keychain \($0)`" }
                .joined(separator: ", ")
            : "`keywell create-keychain`"
        logger.error("cannot ask for the password to \(what) keychain \(names)\(requester.map { " for \($0)" } ?? ""): \(reason)")
        let message = "No password prompt can be shown to \(what) the keychain \(names): \(reason). "
            + "Run \(hint) in a terminal, or set KEYWELL_PINENTRY for keywelld (docs/prompts.md)"
        throw what == "unlock" ? SecretServiceError.isLocked(message) : .failed(message)
    }
}
