import KeywellCore
import KeywellSSHWire

/// What a signature is for, as far as the agent knows: shown in the question when one is asked.
public struct SignatureContext: Sendable {
    /// The fingerprints of the host keys `session-bind@openssh.com` named on this connection,
    /// latest last; empty when the client sent none (git's signing, an older ssh).
    public let hostKeyFingerprints: [String]
}

/// Why a key store will not do what was asked; the agent answers `FAILURE` and logs `reason`.
public struct AgentRefusal: Error, Sendable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
}

/// Where keys added without constraints live (the daemon's keychains; memory in tests).
/// The agent keeps constrained keys itself and asks the store for the rest.
public protocol AgentKeyStore: Sendable {
    /// Who is on the other end of the socket, as the store names and checks callers.
    associatedtype Caller: Sendable

    /// The stored keys' public parts, at most `AgentLimits.maximumListedKeys`.
    func identities() -> [AgentIdentity]
    /// Stores a key added by `caller`; a key already stored is stored again (its comment updated).
    func store(_ key: SSHKeyPair, addedBy caller: Caller) throws(AgentRefusal)
    /// Stores a key imported by `keywell ssh-add`: in `keychain` (nil: the default), trusting
    /// `trusted` besides the programs every key trusts (not the importer itself).
    func store(_ key: SSHKeyPair, in keychain: String?, trusting trusted: [String], importedBy caller: Caller) throws(AgentRefusal)
    /// The private key to sign with for `caller`, after access control; nil when no stored key
    /// has this public blob.
    func privateKey(for publicBlob: [UInt8], caller: Caller, context: SignatureContext) throws(AgentRefusal) -> SecretBytes?
    /// Asks whether `caller` may sign once with a key added with `ssh-add -c`.
    func confirm(_ key: AgentIdentity, caller: Caller, context: SignatureContext) -> Bool
    /// Deletes the key from every place that holds it; false when none did.
    func remove(publicBlob: [UInt8]) -> Bool
    /// Deletes every stored key that can be deleted now.
    func removeAll()
}
