import KeywellProtocol

/// Who a D-Bus caller is, as access control names it (docs/access-control.md "Identities"):
/// one string, used as is in prompts, access lists, logs and the native API.
public struct ApplicationIdentity: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// A Flatpak app: its app id from the sandbox's `/.flatpak-info`.
        case flatpak(appID: String)
        /// A Snap app: its AppArmor label as the bus reports it (`snap.firefox.firefox`).
        case snap(label: String, enforced: Bool)
        /// Anything else: the running executable and, for an interpreter, the script it runs.
        /// `sha256` is nil for a program only root can replace (docs/access-control.md,
        /// "Programs only root can replace"): its path names it whatever root puts there.
        case executable(path: String, sha256: String?, script: Script?)
    }

    /// The script an interpreter runs, as found in its command line.
    public enum Script: Sendable, Hashable {
        /// A script file: its absolute path (symlinks resolved) and the SHA-256 of its contents.
        case file(path: String, sha256: String)
        /// No script file to name (`python3 -m module`, `bash -c …`, a program on standard
        /// input): the identity is the interpreter's alone. `reason` says which case it was.
        case none(reason: String)
    }

    public enum Strength: String, Sendable, Hashable {
        /// The kernel confines the app: it cannot take another app's identity.
        case strong
        /// Any program of the same user can run as this identity (see `reason`).
        case weak
    }

    public let kind: Kind

    public init(_ kind: Kind) { self.kind = kind }

    /// The identity string: `flatpak:<app id>`, `snap:<label>` or
    /// `exe:<path>[;sha256=<hex>][;script=<path>;script-sha256=<hex>]`.
    public var string: String {
        switch kind {
        case .flatpak(let appID): return "flatpak:\(appID)"
        case .snap(let label, _): return "snap:\(label)"
        case .executable(let path, let sha256, let script):
            var text = AccessList.executableIdentity(path: path, sha256Hex: sha256)
            if case .file(let scriptPath, let scriptHash) = script {
                text += ";script=\(scriptPath);script-sha256=\(scriptHash)"
            }
            return text
        }
    }

    public var strength: Strength {
        switch kind {
        case .flatpak: return .strong
        case .snap(_, let enforced): return enforced ? .strong : .weak
        case .executable: return .weak
        }
    }

    /// Why the identity is as strong as it is, in a sentence for people (prompts, `keywell doctor`).
    public var strengthReason: String {
        switch kind {
        case .flatpak:
            return "Flatpak's sandbox keeps the app from changing its app id; "
                + "a program outside any sandbox could still make a sandbox that claims it."
        case .snap(_, true):
            return "AppArmor confines the snap to its profile, which names it."
        case .snap(_, false):
            return "the snap's AppArmor profile is in complain mode: it logs instead of confining."
        case .executable(_, nil, _):
            return "only root can replace this program, so its updates keep its name; but any program of yours "
                + "can run it with LD_PRELOAD, or debug it with ptrace where kernel.yama.ptrace_scope allows, and act as it."
        case .executable:
            return "any program of yours can run this executable with LD_PRELOAD, or debug it with ptrace "
                + "where kernel.yama.ptrace_scope allows, and act as it."
        }
    }

    /// Anything else worth knowing about the identity (an interpreter with no script file).
    public var note: String? {
        if case .executable(_, _, .none(let reason)?) = kind { return reason }
        return nil
    }

    /// What a prompt calls the app: the app id, the snap's name, or the executable's file name
    /// (the script's for an interpreter running one).
    public var displayName: String {
        switch kind {
        case .flatpak(let appID): return appID
        case .snap(let label, _):
            let parts = label.split(separator: ".", omittingEmptySubsequences: false)
            return parts.count > 1 ? String(parts[1]) : label
        case .executable(let path, _, let script):
            if case .file(let scriptPath, _) = script { return Self.fileName(scriptPath) }
            return Self.fileName(path)
        }
    }

    private static func fileName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
