import Foundation
import KeywellCore
import KeywellSSHWire
import KeywellTestSupport
import Logging
import Testing
@testable import KeywellSSHAgent

/// What the agent signs, its own verifier accepts (and nothing else): the check that
/// `session-bind@openssh.com` makes of the host's signature.
struct SignatureRoundTripTests {
    private func key(_ type: String, bits: String) throws -> SSHKeyPair {
        let folder = try TemporaryDirectory(prefix: "keywell-roundtrip")
        defer { folder.remove() }
        let path = folder.subpath("key")
        let made = try ChildProcess.run("ssh-keygen", arguments: ["-q", "-t", type, "-b", bits, "-N", "", "-f", path])
        #expect(made.termination.succeeded)
        let binary = try OpenSSHKeyFile.binary(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        let secret = SecretBytes(copying: try OpenSSHKeyFile.keys(of: binary)[0].agentEncoding)
        let parts = try SSHKeyPair.publicParts(of: secret)
        return SSHKeyPair(type: parts.type, publicBlob: parts.publicBlob, privateKey: secret, comment: "")
    }

    @Test(arguments: [("ed25519", "256"), ("ecdsa", "256"), ("ecdsa", "384"), ("ecdsa", "521"), ("rsa", "2048")])
    func signaturesVerifyAndTamperingIsSeen(type: String, bits: String) throws {
        let pair = try key(type, bits: bits)
        let data = Array("session id".utf8)
        for flags: SignatureFlags in type == "rsa" ? [[], .rsaSHA256, .rsaSHA512] : [[]] {
            let signature = try SSHSigner.sign(pair.privateKey, data: data, flags: flags)
            #expect(SSHVerifier.verify(publicKey: pair.publicBlob, signature: signature, data: data))
            #expect(!SSHVerifier.verify(publicKey: pair.publicBlob, signature: signature, data: data + [0]))
            var damaged = signature
            damaged[damaged.count - 5] ^= 1
            #expect(!SSHVerifier.verify(publicKey: pair.publicBlob, signature: damaged, data: data))
            #expect(!SSHVerifier.verify(publicKey: Array(pair.publicBlob.dropLast()), signature: signature, data: data))
        }
    }

    @Test func aSessionBindIsRecordedOnlyWithTheHostsSignature() throws {
        let host = try key("ed25519", bits: "256")
        let service = AgentService(store: MemoryKeyStore(), logger: Logger(label: "test"))
        let sessionID = [UInt8](repeating: 9, count: 32)
        func bind(_ signature: [UInt8]) -> [UInt8] {
            var writer = SSHWireWriter()
            writer.byte(AgentMessage.extension.rawValue)
            writer.text(AgentExtension.sessionBind)
            writer.string(host.publicBlob)
            writer.string(sessionID)
            writer.string(signature)
            writer.byte(0)
            return writer.bytes
        }
        var state = AgentConnectionState()
        let forged = try SSHSigner.sign(host.privateKey, data: sessionID + [1], flags: [])
        #expect(service.handle(bind(forged), connection: &state, caller: "test") == AgentReply.extensionFailure)
        #expect(state.sessionBinds.isEmpty)
        let signed = try SSHSigner.sign(host.privateKey, data: sessionID, flags: [])
        #expect(service.handle(bind(signed), connection: &state, caller: "test") == AgentReply.success)
        #expect(state.sessionBinds.count == 1)
        // Bound for authentication: not again on this connection, as OpenSSH's agent refuses it.
        #expect(service.handle(bind(signed), connection: &state, caller: "test") == AgentReply.extensionFailure)
    }
}
