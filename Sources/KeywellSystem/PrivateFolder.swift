#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a folder meant for this user alone (the runtime folder with keywelld's sockets) is, as
/// `lstat` sees it: the daemon makes it private and refuses the rest, a client refuses anything
/// but `.privateToThisUser` (a socket in any other folder could have been put there by someone else).
package enum PrivateFolderState: Equatable, Sendable {
    case privateToThisUser
    /// A real folder of this user's that others can enter (group or other bits set).
    case openToOthers(mode: UInt32)
    case ownedBy(uid: UInt32)
    /// Not a folder: a symlink, a file, a socket.
    case notAFolder
    case unreadable(errno: Int32)

    /// Inspects `path` without following a symlink.
    package static func of(_ path: String) -> PrivateFolderState {
        var status = stat()
        guard lstat(path, &status) == 0 else { return .unreadable(errno: errno) }
        guard status.st_mode & S_IFMT == S_IFDIR else { return .notAFolder }
        guard status.st_uid == getuid() else { return .ownedBy(uid: status.st_uid) }
        guard status.st_mode & 0o077 == 0 else { return .openToOthers(mode: status.st_mode & 0o7777) }
        return .privateToThisUser
    }

    /// Why `path` is not private, in words for an error message.
    package func problem(with path: String) -> String? {
        switch self {
        case .privateToThisUser: nil
        case .openToOthers(let mode): "\(path) is open to other users (mode \(String(mode, radix: 8)))"
        case .ownedBy(let uid): "\(path) belongs to uid \(uid), not to this user"
        case .notAFolder: "\(path) is not a folder"
        case .unreadable(let code): "cannot inspect \(path): \(String(cString: strerror(code)))"
        }
    }
}
