/// Keychain paths as every part compares them: the daemon, the CLI and the client must agree on
/// when two spellings name the same file.
public enum KeychainPath {
    /// Removes `.`, `..` and repeated slashes without touching the file system (symlinks are the
    /// user's business); nil for a path that is not absolute or contains a NUL.
    public static func normalized(_ path: String) -> String? {
        guard path.hasPrefix("/"), !path.utf8.contains(0) else { return nil }
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }
}
