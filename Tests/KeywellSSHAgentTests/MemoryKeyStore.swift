import KeywellCore
import KeywellSSHAgent
import KeywellSSHWire
import KeywellSystem

/// A key store in memory that trusts one caller name, for the agent's tests.
final class MemoryKeyStore: AgentKeyStore {
    typealias Caller = String

    let trusted: String
    private let keys = Protected<[SSHKeyPair]>([])
    private let confirmAnswer: Bool

    init(trusted: String = "test", confirmAnswer: Bool = true) {
        self.trusted = trusted
        self.confirmAnswer = confirmAnswer
    }

    var count: Int { keys.withLock { $0.count } }

    func identities() -> [AgentIdentity] {
        keys.withLock { $0.map { AgentIdentity(publicBlob: $0.publicBlob, comment: $0.comment) } }
    }

    func store(_ key: SSHKeyPair, addedBy caller: String) throws(AgentRefusal) {
        keys.withLock { keys in
            keys.removeAll { $0.publicBlob == key.publicBlob }
            keys.append(key)
        }
    }

    func store(_ key: SSHKeyPair, in keychain: String?, trusting trusted: [String], importedBy caller: String) throws(AgentRefusal) {
        try store(key, addedBy: caller)
    }

    func privateKey(for publicBlob: [UInt8], caller: String, context: SignatureContext) throws(AgentRefusal) -> SecretBytes? {
        guard let key = keys.withLock({ $0.first { $0.publicBlob == publicBlob } }) else { return nil }
        guard caller == trusted else { throw AgentRefusal("\(caller) is not on the key's list") }
        return key.privateKey
    }

    func confirm(_ key: AgentIdentity, caller: String, context: SignatureContext) -> Bool { confirmAnswer }

    func remove(publicBlob: [UInt8]) -> Bool {
        keys.withLock { keys in
            let before = keys.count
            keys.removeAll { $0.publicBlob == publicBlob }
            return keys.count != before
        }
    }

    func removeAll() { keys.withLock { $0.removeAll() } }
}
