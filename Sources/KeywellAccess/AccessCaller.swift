import KeywellIdentity

/// Who asks for an item (docs/access-control.md "Who is asked"): one bus connection and the
/// application identity keywelld worked out for it. A connection whose identity could not be
/// worked out (`identity` nil) is trusted with nothing: it reads only items open to any
/// application, and a question about it can be answered Allow or Deny, never Always Allow.
public struct AccessCaller: Sendable, Hashable {
    /// The connection's unique bus name (`:1.42`): once-allowances live as long as it does.
    public let connection: String
    public let identity: ApplicationIdentity?
    /// `identity.string`, worked out once: every access check compares it.
    public let identityString: String?
    /// For an interpreter running a script: the interpreter's own identity (no `;script=`),
    /// which a list entry may name to trust the program whatever script it runs.
    let programString: String?
    /// Flatpak and Snap apps see only the items whose list names them.
    public let isSandboxed: Bool

    public init(connection: String, identity: ApplicationIdentity?) {
        self.connection = connection
        self.identity = identity
        self.identityString = identity?.string
        switch identity?.kind {
        case .executable(let path, let sha256, .file?)?:
            programString = ApplicationIdentity(.executable(path: path, sha256: sha256, script: nil)).string
            isSandboxed = false
        case .flatpak?, .snap?:
            programString = nil
            isSandboxed = true
        default:
            programString = nil
            isSandboxed = false
        }
    }

    /// What a question calls the app.
    public var displayName: String { identity?.displayName ?? "An unidentified program" }

    public static func == (left: AccessCaller, right: AccessCaller) -> Bool {
        left.connection == right.connection && left.identityString == right.identityString
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(connection)
        hasher.combine(identityString)
    }
}
