import KeywellIdentity
import KeywellProtocol
import KeywellSystem

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
    /// For a program only root can replace: how an entry written while such programs were named
    /// with their hash begins (`exe:<path>;sha256=`), and what follows the path in the caller's
    /// name (its script part, or nothing). `AccessList.trusts` matches such entries by path.
    let hashedEntryPrefix: String?
    let scriptPart: String
    /// Flatpak and Snap apps see only the items whose list names them.
    public let isSandboxed: Bool

    public init(connection: String, identity: ApplicationIdentity?) {
        self.connection = connection
        self.identity = identity
        let own = identity?.string
        self.identityString = own
        var program: String?
        var hashedEntryPrefix: String?
        var scriptPart = ""
        switch identity?.kind {
        case .executable(let path, let sha256, let script)?:
            let name = AccessList.executableIdentity(path: path, sha256Hex: sha256)
            if case .file? = script { program = name }
            if sha256 == nil, let own {
                hashedEntryPrefix = name + AccessList.executableHashField
                scriptPart = String(decoding: own.utf8.dropFirst(name.utf8.count), as: UTF8.self)
            }
            isSandboxed = false
        case .flatpak?, .snap?:
            isSandboxed = true
        case nil:
            isSandboxed = false
        }
        self.programString = program
        self.hashedEntryPrefix = hashedEntryPrefix
        self.scriptPart = scriptPart
    }

    /// What a question calls the app.
    public var displayName: String { identity?.displayName ?? "An unidentified program" }

    /// Byte for byte (`ExactText`): a path spelt in other bytes is another program.
    public static func == (left: AccessCaller, right: AccessCaller) -> Bool {
        left.connection.isExactly(right.connection)
            && left.identityString.map(ExactText.init) == right.identityString.map(ExactText.init)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ExactText(connection))
        hasher.combine(identityString.map(ExactText.init))
    }
}
