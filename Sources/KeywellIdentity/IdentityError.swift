/// Why a caller has no identity. A caller without one is trusted with nothing.
public enum IdentityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bus did not answer for the caller (it left, or the bus failed).
    case bus(String)
    /// The connection belongs to another user (impossible on a session bus; refused anyway).
    case otherUser(uid: UInt32)
    /// The process could not be pinned or read (gone, not dumpable, not ours to inspect).
    case process(String)
    /// The process went away or its pid changed hands while it was examined.
    case raced
    /// A sandbox description that is present but cannot be trusted (malformed, not a regular
    /// file, instance not known to Flatpak), or a security label that cannot be a snap's.
    case untrustedSandbox(String)
    /// The process credited with the connection does not hold it as its own: it was handed over
    /// an exec or left to another process (docs/access-control.md, "A connection handed over an exec").
    case borrowedConnection(pid: Int32)

    public var description: String {
        switch self {
        case .bus(let message): return "the bus did not describe the caller: \(message)"
        case .otherUser(let uid): return "the caller belongs to another user (uid \(uid))"
        case .process(let message): return "the caller's process could not be examined: \(message)"
        case .raced: return "the caller's process changed while it was examined"
        case .untrustedSandbox(let message): return "the caller's sandbox cannot be trusted: \(message)"
        case .borrowedConnection(let pid):
            return "the connection is not process \(pid)'s own (it crossed an exec or was left to another process)"
        }
    }
}
