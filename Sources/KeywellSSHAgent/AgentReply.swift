import KeywellSSHWire

/// A key as listed: its public blob and comment.
public struct AgentIdentity: Sendable, Equatable {
    public let publicBlob: [UInt8]
    public let comment: String

    public init(publicBlob: [UInt8], comment: String) {
        self.publicBlob = publicBlob
        self.comment = comment
    }
}

/// The bodies of the agent's replies (the frame's length is added by the connection).
public enum AgentReply {
    public static let success: [UInt8] = [AgentMessage.success.rawValue]
    public static let failure: [UInt8] = [AgentMessage.failure.rawValue]
    public static let extensionFailure: [UInt8] = [AgentMessage.extensionFailure.rawValue]

    public static func status(_ succeeded: Bool) -> [UInt8] { succeeded ? success : failure }

    public static func identities(_ identities: [AgentIdentity]) -> [UInt8] {
        var writer = SSHWireWriter()
        writer.byte(AgentMessage.identitiesAnswer.rawValue)
        writer.uint32(UInt32(identities.count))
        for identity in identities {
            writer.string(identity.publicBlob)
            writer.text(identity.comment)
        }
        return writer.bytes
    }

    public static func signature(_ blob: [UInt8]) -> [UInt8] {
        var writer = SSHWireWriter()
        writer.byte(AgentMessage.signResponse.rawValue)
        writer.string(blob)
        return writer.bytes
    }

    /// The `query` extension's answer: the extensions served.
    public static func query() -> [UInt8] {
        var writer = SSHWireWriter()
        writer.byte(AgentMessage.extensionResponse.rawValue)
        writer.text(AgentExtension.query)
        writer.text(AgentExtension.sessionBind)
        writer.text(AgentExtension.keychainAdd)
        return writer.bytes
    }
}
