import FoundationEssentials

/// `kernel.yama.ptrace_scope`, which decides how far one of the user's programs can take over
/// another, and so how much an `exe:` identity is worth (docs/access-control.md "Strength").
enum PtraceScope {
    static let path = "/proc/sys/kernel/yama/ptrace_scope"

    /// The setting's value, or nil when the kernel has no Yama (no such file).
    static func read(path: String = path) -> Int? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return Int(text.filter { !$0.isWhitespace })
    }

    /// What the value means for `exe:` identities, in words.
    static func meaning(_ value: Int?) -> String {
        let preload = " Any program of yours can still start a trusted one with LD_PRELOAD and act as it."
        switch value {
        case nil:
            return "absent: the kernel has no Yama, so any program of yours can debug (ptrace) any other and act "
                + "as it; exe: identities are only as trustworthy as every program you run." + preload
        case 0:
            return "0 (classic): any program of yours can debug (ptrace) any other and act as it; exe: identities "
                + "are only as trustworthy as every program you run." + preload
        case 1:
            return "1 (restricted): a program can debug only its own descendants, so none can take over an app "
                + "that is already running." + preload
        case 2:
            return "2 (admin-only): only root can debug other programs." + preload
        case 3:
            return "3 (no attach): no program can be debugged at all." + preload
        case let other?:
            return "\(other) (unknown to this version of Keywell)." + preload
        }
    }
}
