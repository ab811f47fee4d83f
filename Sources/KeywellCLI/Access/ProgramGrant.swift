import KeywellNativeClient
import KeywellProtocol

/// The program `keywell access` adds, removes or looks for: `-T path` (its identity now, as
/// `-T` on the add commands makes it) or `--identity id` (an entry as `access list` and
/// `dump-keychain -a` print it). docs/access-control.md, "Grants a person can manage".
struct ProgramGrant: Equatable {
    /// The entry `access add` writes.
    let identity: String

    static func from(path: String) throws(KeychainError) -> ProgramGrant {
        guard !path.isEmpty else { throw .param("-T needs a program's path") }
        return ProgramGrant(identity: try ExecutableIdentity.of(path: path))
    }

    static func from(identity: String) throws(KeychainError) -> ProgramGrant {
        // The list's own rules: 1 to 1024 bytes, no control characters.
        _ = try AccessList.validated([identity])
        return ProgramGrant(identity: identity)
    }

    /// Whether `entry` of a list names this program, as keywelld matches a caller: the identity
    /// itself, and for a program only root can replace (`exe:<path>`, no hash) also the entries
    /// written for its path with a hash (docs/access-control.md, "Programs only root can replace").
    func isNamed(by entry: String) -> Bool {
        if entry == identity { return true }
        guard identity.hasPrefix("exe:"), !identity.contains(";") else { return false }
        let hashed = identity + AccessList.executableHashField
        return entry.hasPrefix(hashed) && !entry.dropFirst(hashed.count).contains(";")
    }

    /// Whether `list` names this program (a list open to any application names none).
    func isNamed(in list: AccessList?) -> Bool {
        list?.applications?.contains(where: isNamed(by:)) ?? false
    }
}
