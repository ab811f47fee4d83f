import KeywellProtocol
#if canImport(Glibc)
import Glibc
#endif

extension LoginUnlockCommand {
    /// Whose login keychain: the caller's own, or, for root, the user named, else the one who
    /// ran sudo (`SUDO_UID`).
    struct Target {
        var name: String
        var uid: uid_t
        var home: String
        var asRoot: Bool
        /// The user's runtime folder, as the PAM module finds it.
        var runtimeFolder: String
        /// `$XDG_DATA_HOME/keywell/login-unlock` (root: the default data folder in the home).
        var enrolmentPath: String

        var channel: ControlChannel { ControlChannel(uid: uid, runtimeFolder: runtimeFolder) }

        struct Problem: Error { var text: String }

        static func resolve(_ named: String?) -> Result<Target, Problem> {
            let asRoot = geteuid() == 0
            let account: Account?
            if let named {
                guard asRoot else { return .failure(Problem(text: "only root may name a user")) }
                account = Account.find(name: named)
            } else if asRoot {
                guard let sudoUID = getenv("SUDO_UID").flatMap({ uid_t(String(cString: $0)) }) else {
                    return .failure(Problem(text: "as root, name the user (or run it through sudo)"))
                }
                account = Account.find(uid: sudoUID)
            } else {
                account = Account.find(uid: geteuid())
            }
            guard let account else { return .failure(Problem(text: "no such user: \(named ?? "?")")) }
            let uid = account.uid
            guard uid != 0 else { return .failure(Problem(text: "root has no login keychain to unlock this way")) }
            let name = account.name
            let home = account.home
            func own(_ key: String) -> String? {
                guard !asRoot, let value = getenv(key).map({ String(cString: $0) }), value.hasPrefix("/") else { return nil }
                return value
            }
            let dataHome = own("XDG_DATA_HOME") ?? home + "/.local/share"
            return .success(Target(
                name: name, uid: uid, home: home, asRoot: asRoot,
                runtimeFolder: own("XDG_RUNTIME_DIR") ?? "/run/user/\(uid)",
                enrolmentPath: "\(dataHome)/keywell/\(KeywellNames.loginUnlockFile)"))
        }
    }
}
