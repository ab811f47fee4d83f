import KeywellProtocol

/// What a client's store is told when it cannot go on by itself: the alias it writes to names no
/// keychain, or the keychain is locked, after the prompt that would have fixed that was dismissed
/// or could not be shown. libsecret prints the message of the last error, so the message says why
/// and what the person can do (docs/secret-service.md, "First store").
enum FirstStoreAdvice {
    /// `why`: why the caller's last prompt ended dismissed, if it did.
    static func missingAlias(_ alias: String, why: String?) -> String {
        let reason = why.map { "; the prompt to create one ended: \($0)" } ?? ""
        switch alias {
        case "login":
            return "No collection has the alias login: the login keychain does not exist\(reason). "
                + "Create it with `keywell create-keychain \(KeywellNames.loginKeychain)`."
        default:
            return "No collection has the alias \(alias): no keychain is the default one\(reason). "
                + "Create the login keychain with `keywell create-keychain \(KeywellNames.loginKeychain)`, "
                + "or make a keychain the default with `keywell default-keychain -s NAME`."
        }
    }

    static func locked(_ keychain: String, why: String?) -> String {
        let reason = why.map { "; the prompt to unlock it ended: \($0)" } ?? ""
        return "The keychain “\(keychain)” is locked\(reason). Unlock it with `keywell unlock-keychain \(keychain)`."
    }
}
