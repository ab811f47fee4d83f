import KeywellCore
import KeywellSSHWire
import KeywellSystem
import Logging

@testable import KeywellSSHAgent

/// What the SSH agent reads from its socket and from files: the first byte picks the reader,
/// the rest is its input. 0: an agent request body, handled by `AgentService` over a store in
/// memory, twice on one connection; 1: an OpenSSH private key file's binary; 2: a certificate.
/// Each must answer or throw `AgentParseError`, never crash; a reply is always one of the agent's
/// reply messages, and a request the parser refused is answered FAILURE with nothing stored.

/// Keys in memory, trusting every caller.
final class FuzzKeyStore: AgentKeyStore {
    typealias Caller = Int
    let keys = Protected<[SSHKeyPair]>([])

    func identities() -> [AgentIdentity] { keys.withLock { $0.map { AgentIdentity(publicBlob: $0.publicBlob, comment: $0.comment) } } }
    func store(_ key: SSHKeyPair, addedBy caller: Int) throws(AgentRefusal) {
        keys.withLock { keys in
            keys.removeAll { $0.publicBlob == key.publicBlob }
            if keys.count < 8 { keys.append(key) }
        }
    }
    func store(_ key: SSHKeyPair, in keychain: String?, trusting trusted: [String], importedBy caller: Int) throws(AgentRefusal) {
        try store(key, addedBy: caller)
    }
    func privateKey(for publicBlob: [UInt8], caller: Int, context: SignatureContext) throws(AgentRefusal) -> SecretBytes? {
        keys.withLock { $0.first { $0.publicBlob == publicBlob }?.privateKey }
    }
    func confirm(_ key: AgentIdentity, caller: Int, context: SignatureContext) -> Bool { false }
    func remove(publicBlob: [UInt8]) -> Bool {
        keys.withLock { keys in
            let before = keys.count
            keys.removeAll { $0.publicBlob == publicBlob }
            return keys.count != before
        }
    }
    func removeAll() { keys.withLock { $0.removeAll() } }
}

let replies: Set<UInt8> = [
    AgentMessage.failure.rawValue, AgentMessage.success.rawValue, AgentMessage.identitiesAnswer.rawValue,
    AgentMessage.signResponse.rawValue, AgentMessage.extensionFailure.rawValue, AgentMessage.extensionResponse.rawValue,
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 1, size <= AgentLimits.maximumFrame else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 3 {
    case 0:
        let store = FuzzKeyStore()
        let service = AgentService(store: store, logger: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() }))
        var state = AgentConnectionState()
        let parsed = (try? AgentRequest.parse(input)) != nil
        for _ in 0..<2 {
            let reply = service.handle(input, connection: &state, caller: 0)
            guard let first = reply.first, replies.contains(first) else { fatalError("an unknown reply \(reply.prefix(8))") }
            if !parsed, first != AgentMessage.failure.rawValue { fatalError("a refused request was not answered FAILURE") }
        }
        if !parsed, !store.identities().isEmpty { fatalError("a refused request stored a key") }
    case 1:
        _ = try? OpenSSHKeyFile.cipher(of: input)
        if let keys = try? OpenSSHKeyFile.keys(of: input) {
            for key in keys { _ = try? SSHKeyPair.publicParts(of: SecretBytes(copying: key.agentEncoding)) }
        }
    default:
        if let certificate = try? SSHCertificate(input) {
            _ = SSHVerifier.verify(publicKey: certificate.signatureKey, signature: certificate.signature, data: certificate.signedPart)
        }
    }
    return 0
}
