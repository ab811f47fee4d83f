import KeywellCore
import KeywellProtocol
import KeywellSSHWire

/// Constraints a key was added with (`ssh-add -t`, `-c`): such a key stays in memory only.
public struct KeyConstraints: Sendable, Equatable {
    public var lifetimeSeconds: UInt32?
    public var confirm = false

    public init(lifetimeSeconds: UInt32? = nil, confirm: Bool = false) {
        self.lifetimeSeconds = lifetimeSeconds
        self.confirm = confirm
    }

    public var keepsInMemoryOnly: Bool { lifetimeSeconds != nil || confirm }
}

/// What a host key said about the connection a signature is for (`session-bind@openssh.com`).
public struct SessionBind: Sendable, Equatable {
    public let hostKey: [UInt8]
    public let sessionID: [UInt8]
    public let forwarded: Bool
}

/// One request of the agent protocol, read from a frame's body (its type byte first).
public enum AgentRequest: Sendable {
    case requestIdentities
    case sign(publicBlob: [UInt8], data: [UInt8], flags: SignatureFlags)
    case add(SSHKeyPair, KeyConstraints)
    case remove(publicBlob: [UInt8])
    case removeAll
    case lock(passphrase: SecretBytes)
    case unlock(passphrase: SecretBytes)
    case sessionBind(SessionBind, signature: [UInt8])
    /// A `session-bind@openssh.com` that does not parse: answered `EXTENSION_FAILURE`.
    case malformedSessionBind(AgentParseError)
    /// `keywell ssh-add`: a key for a named keychain (nil: the default) that also trusts `trusted`.
    case addToKeychain(SSHKeyPair, keychain: String?, trusted: [String])
    /// The `query` extension: the extensions this agent knows.
    case query
    /// An extension this agent does not know: answered `FAILURE`, as OpenSSH's agent does.
    case unknownExtension(name: String)
    /// A message this agent does not serve (smartcards, SSH1, unknown numbers).
    case unsupported(type: UInt8)


    /// Caps of `keychain-add@keywell`: a keychain's name or path (PATH_MAX), the trusted
    /// identities (an access list's cap, less the two programs every key trusts) and each one's
    /// bytes (docs/access-control.md).
    static let maximumKeychainName = 4096
    static let maximumTrusted = AccessList.maxApplications - 2
    static let maximumIdentity = AccessList.maxIdentityBytes

    /// Reads `body`. Throws for a message it knows that does not parse; never stores anything.
    public static func parse(_ body: [UInt8]) throws(AgentParseError) -> AgentRequest {
        // Array's withUnsafeBytes only rethrows untyped errors: the Result keeps the type.
        try body.withUnsafeBytes { buffer in Result { () throws(AgentParseError) in try parse(buffer) } }.get()
    }

    private static func parse(_ buffer: UnsafeRawBufferPointer) throws(AgentParseError) -> AgentRequest {
        var reader = SSHWireReader(buffer)
        let typeByte = try reader.byte()
        guard let type = AgentMessage(rawValue: typeByte) else { return .unsupported(type: typeByte) }
        let request: AgentRequest
        switch type {
        case .requestIdentities:
            request = .requestIdentities
        case .signRequest:
            let blob = try reader.string()
            let data = try reader.string()
            request = .sign(publicBlob: blob, data: data, flags: SignatureFlags(rawValue: try reader.uint32()))
        case .addIdentity, .addIdentityConstrained:
            let key = try SSHKeyPair.read(&reader)
            let comment = try reader.text(maximum: AgentLimits.maximumComment)
            let constraints = try readConstraints(&reader, allowed: type == .addIdentityConstrained)
            request = .add(SSHKeyPair(type: key.type, publicBlob: key.publicBlob, privateKey: key.privateKey, comment: comment), constraints)
        case .removeIdentity:
            request = .remove(publicBlob: try reader.string())
        case .removeAllIdentities:
            request = .removeAll
        case .lock, .unlock:
            let passphrase = SecretBytes(copying: try reader.stringBytes())
            request = type == .lock ? .lock(passphrase: passphrase) : .unlock(passphrase: passphrase)
        case .extension:
            let name = try reader.text(maximum: 256)
            switch name {
            case AgentExtension.sessionBind:
                do throws(AgentParseError) {
                    let (bind, signature) = try readSessionBind(&reader)
                    return .sessionBind(bind, signature: signature)
                } catch {
                    return .malformedSessionBind(error)
                }
            case AgentExtension.query: return .query
            case AgentExtension.keychainAdd:
                let keychain = try reader.text(maximum: maximumKeychainName)
                let count = Int(try reader.uint32())
                guard count <= maximumTrusted else { throw AgentParseError("more than \(maximumTrusted) trusted programs") }
                var trusted: [String] = []
                for _ in 0..<count { trusted.append(try reader.text(maximum: maximumIdentity)) }
                let key = try SSHKeyPair.read(&reader)
                let comment = try reader.text(maximum: AgentLimits.maximumComment)
                try reader.expectEnd()
                let pair = SSHKeyPair(type: key.type, publicBlob: key.publicBlob, privateKey: key.privateKey, comment: comment)
                return .addToKeychain(pair, keychain: keychain.isEmpty ? nil : keychain, trusted: trusted)
            default: return .unknownExtension(name: name)
            }
        default:
            return .unsupported(type: typeByte)
        }
        try reader.expectEnd()
        return request
    }

    private static func readConstraints(_ reader: inout SSHWireReader, allowed: Bool) throws(AgentParseError) -> KeyConstraints {
        var constraints = KeyConstraints()
        while !reader.isAtEnd {
            guard allowed else { throw AgentParseError("constraints on an unconstrained add") }
            let number = try reader.byte()
            switch AgentConstraint(rawValue: number) {
            case .lifetime:
                let seconds = try reader.uint32()
                guard seconds > 0, seconds <= AgentLimits.maximumLifetimeSeconds else { throw AgentParseError("a lifetime out of range") }
                constraints.lifetimeSeconds = seconds
            case .confirm:
                constraints.confirm = true
            case .extension:
                let name = try reader.text(maximum: 256)
                throw AgentParseError("unsupported constraint \"\(name)\"")
            case nil:
                throw AgentParseError("unknown constraint \(number)")
            }
        }
        return constraints
    }

    private static func readSessionBind(_ reader: inout SSHWireReader) throws(AgentParseError) -> (SessionBind, [UInt8]) {
        let hostKey = try reader.string()
        let sessionID = try reader.string()
        let signature = try reader.string()
        let forwarded = try reader.bool()
        try reader.expectEnd()
        guard sessionID.count <= AgentLimits.maximumSessionID else { throw AgentParseError("a session id that is too long") }
        guard hostKey.count <= AgentLimits.maximumFrame else { throw AgentParseError("a host key that is too long") }
        return (SessionBind(hostKey: hostKey, sessionID: sessionID, forwarded: forwarded), signature)
    }
}
