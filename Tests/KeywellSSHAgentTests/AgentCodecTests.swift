import KeywellCore
import KeywellSSHWire
import Logging
import Testing
@testable import KeywellSSHAgent

struct AgentCodecTests {
    let service = AgentService(store: MemoryKeyStore(), logger: Logger(label: "test"))

    private func reply(_ body: [UInt8], caller: String = "test") -> [UInt8] {
        var state = AgentConnectionState()
        return service.handle(body, connection: &state, caller: caller)
    }

    /// An Ed25519 key in the agent's encoding, made with libsodium.
    static func ed25519AddBody(comment: String = "test key") -> [UInt8] {
        var publicKey = [UInt8](repeating: 0, count: 32)
        var secretKey = [UInt8](repeating: 0, count: 64)
        let seed = [UInt8](repeating: 7, count: 32)
        _ = Ed25519TestKey.seedKeypair(&publicKey, &secretKey, seed)
        var writer = SSHWireWriter()
        writer.byte(AgentMessage.addIdentity.rawValue)
        writer.text("ssh-ed25519")
        writer.string(publicKey)
        writer.string(secretKey)
        writer.text(comment)
        return writer.bytes
    }

    @Test func mpintsAreMinimalAndPositive() throws {
        var writer = SSHWireWriter()
        writer.mpint(magnitude: [0, 0, 0x80, 1])
        writer.mpint(magnitude: [0, 0x7f])
        writer.mpint(magnitude: [0, 0])
        #expect(writer.bytes == [0, 0, 0, 3, 0, 0x80, 1, 0, 0, 0, 1, 0x7f, 0, 0, 0, 0])
        try writer.bytes.withUnsafeBytes { buffer in
            var reader = SSHWireReader(buffer)
            #expect(Array(try reader.positiveMPInt()) == [0x80, 1])
            #expect(Array(try reader.positiveMPInt()) == [0x7f])
            #expect(Array(try reader.positiveMPInt()) == [])
            try reader.expectEnd()
        }
        for bad: [UInt8] in [[0, 0, 0, 1, 0x80], [0, 0, 0, 2, 0, 1], [0, 0, 0, 5, 1]] {
            bad.withUnsafeBytes { buffer in
                var reader = SSHWireReader(buffer)
                #expect(throws: AgentParseError.self) { try reader.positiveMPInt() }
            }
        }
    }

    @Test func anEd25519KeyIsAddedListedAndSigns() throws {
        #expect(reply(Self.ed25519AddBody()) == AgentReply.success)
        let listed = reply([AgentMessage.requestIdentities.rawValue])
        #expect(listed.first == AgentMessage.identitiesAnswer.rawValue)
        #expect(Array(listed[1..<5]) == [0, 0, 0, 1])
        let identities = service.store.identities()
        var request = SSHWireWriter()
        request.byte(AgentMessage.signRequest.rawValue)
        request.string(identities[0].publicBlob)
        request.string(Array("data".utf8))
        request.uint32(0)
        let signed = reply(request.bytes)
        #expect(signed.first == AgentMessage.signResponse.rawValue)
        #expect(reply(request.bytes, caller: "stranger") == AgentReply.failure)
    }

    @Test func everyPrefixOfAnAddIsRefusedAndNothingIsStored() {
        let whole = Self.ed25519AddBody()
        for length in 1..<whole.count {
            #expect(reply(Array(whole[..<length])) == AgentReply.failure)
        }
        #expect(reply(whole + [0]) == AgentReply.failure)
        #expect(service.store.identities().isEmpty)
    }

    @Test func anUnknownKeyTypeIsRefused() {
        var writer = SSHWireWriter()
        writer.byte(AgentMessage.addIdentity.rawValue)
        writer.text("ssh-dss")
        writer.string([1, 2, 3])
        writer.text("comment")
        #expect(reply(writer.bytes) == AgentReply.failure)
        #expect(service.store.identities().isEmpty)
    }

    @Test func aMismatchedEd25519KeyIsRefused() {
        var body = Self.ed25519AddBody()
        // The public key's first byte, inside the first string after the type.
        body[1 + 4 + 11 + 4] ^= 1
        #expect(reply(body) == AgentReply.failure)
    }

    @Test func extensionsAreAnsweredAsOpenSSHDoes() {
        var unknown = SSHWireWriter()
        unknown.byte(AgentMessage.extension.rawValue)
        unknown.text("nobody@example.com")
        #expect(reply(unknown.bytes) == AgentReply.failure)
        var badBind = SSHWireWriter()
        badBind.byte(AgentMessage.extension.rawValue)
        badBind.text(AgentExtension.sessionBind)
        badBind.string([1])
        #expect(reply(badBind.bytes) == AgentReply.extensionFailure)
        var query = SSHWireWriter()
        query.byte(AgentMessage.extension.rawValue)
        query.text(AgentExtension.query)
        #expect(reply(query.bytes).first == AgentMessage.extensionResponse.rawValue)
        #expect(reply([99]) == AgentReply.failure)
        #expect(reply([AgentMessage.addSmartcardKey.rawValue]) == AgentReply.failure)
    }

    @Test func aKeyWithALifetimeIsForgottenWhenDueWithoutARequest() async throws {
        var body = Self.ed25519AddBody()
        body[0] = AgentMessage.addIdentityConstrained.rawValue
        body += [AgentConstraint.lifetime.rawValue, 0, 0, 0, 1]
        #expect(reply(body) == AgentReply.success)
        #expect(service.memoryKeyCount == 1)
        #expect(service.store.identities().isEmpty)
        try await Task.sleep(for: .milliseconds(1500))
        #expect(service.memoryKeyCount == 0)
    }

    @Test func theAgentLockHidesKeysUntilTheRightPassphrase() {
        #expect(reply(Self.ed25519AddBody()) == AgentReply.success)
        func passphrase(_ type: AgentMessage, _ text: String) -> [UInt8] {
            var writer = SSHWireWriter()
            writer.byte(type.rawValue)
            writer.text(text)
            return writer.bytes
        }
        #expect(reply(passphrase(.lock, "secret")) == AgentReply.success)
        #expect(reply([AgentMessage.requestIdentities.rawValue]) == [AgentMessage.identitiesAnswer.rawValue, 0, 0, 0, 0])
        #expect(reply(passphrase(.lock, "again")) == AgentReply.failure)
        #expect(reply(passphrase(.unlock, "wrong")) == AgentReply.failure)
        #expect(reply(passphrase(.unlock, "secret")) == AgentReply.success)
        #expect(reply([AgentMessage.requestIdentities.rawValue]).count > 5)
    }
}
