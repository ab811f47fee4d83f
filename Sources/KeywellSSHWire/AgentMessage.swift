/// The OpenSSH agent protocol's numbers (draft-miller-ssh-agent; docs/ssh.md), defined once.
public enum AgentMessage: UInt8, Sendable {
    // Replies.
    case failure = 5
    case success = 6
    case identitiesAnswer = 12
    case signResponse = 14
    case extensionFailure = 28
    case extensionResponse = 29

    // Requests.
    case requestIdentities = 11
    case signRequest = 13
    case addIdentity = 17
    case removeIdentity = 18
    case removeAllIdentities = 19
    case addSmartcardKey = 20
    case removeSmartcardKey = 21
    case lock = 22
    case unlock = 23
    case addIdentityConstrained = 25
    case addSmartcardKeyConstrained = 26
    case `extension` = 27
}

/// The extensions the agent answers (`SSH_AGENTC_EXTENSION`'s name), defined once.
public enum AgentExtension {
    /// OpenSSH's: the host key and session a connection's signatures are for.
    public static let sessionBind = "session-bind@openssh.com"
    /// The extensions served.
    public static let query = "query"
    /// Keywell's own, for `keywell ssh-add`: a key stored in a named keychain, trusting more
    /// programs. Body: string keychain ("" for the default), uint32 count, that many strings
    /// (access-list identities), the key in the agent's encoding, string comment.
    public static let keychainAdd = "keychain-add@keywell"
}

/// Constraints that may follow a key in `addIdentityConstrained`.
public enum AgentConstraint: UInt8, Sendable {
    /// uint32 seconds: forget the key after that long.
    case lifetime = 1
    /// Ask before each signature.
    case confirm = 2
    /// string name, then data the name defines; Keywell knows none and refuses the key.
    case `extension` = 255
}

/// The flags of a signature request.
public struct SignatureFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let rsaSHA256 = SignatureFlags(rawValue: 0x02)
    public static let rsaSHA512 = SignatureFlags(rawValue: 0x04)
}

/// The agent's caps, each defined once (docs/ssh.md, "Limits").
public enum AgentLimits {
    /// The largest frame (after its 4-byte length) the agent reads: OpenSSH's own cap. A longer
    /// announced length ends the connection as OpenSSH's agent does.
    public static let maximumFrame = 256 * 1024
    /// Keys kept in memory only (`ssh-add -t`/`-c`) at once.
    public static let maximumMemoryKeys = 64
    /// Keys listed in one identities answer (memory and keychain together).
    public static let maximumListedKeys = 512
    /// Certificates kept with one stored key (at the cap, expired ones make room for another).
    public static let maximumCertificatesPerKey = 8
    /// A key comment's bytes.
    public static let maximumComment = 1024
    /// Session ids recorded by `session-bind@openssh.com` per connection, and one id's bytes.
    public static let maximumSessionBinds = 128
    public static let maximumSessionID = 128
    /// The longest lifetime `ssh-add -t` may ask for: one year.
    public static let maximumLifetimeSeconds: UInt32 = 365 * 24 * 3600
    /// The smallest and largest RSA modulus accepted, in bits (OpenSSH refuses below 1024).
    public static let minimumRSABits = 1024
    public static let maximumRSABits = 16384
    /// Seconds a client may take to send a whole frame once it started, and to take a reply.
    public static let ioTimeoutSeconds = 10
    /// Connections served at once; more wait in the listen queue.
    public static let maximumConnections = 64
}
