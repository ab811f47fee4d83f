import Foundation
import KeywellAccess
import KeywellCore
import KeywellIdentity
import KeywellProtocol
import KeywellSSHAgent
import KeywellSSHWire
import Logging

/// Who is on the other end of an agent connection: named as the direct socket names its peers
/// (`IdentityResolver.resolve(peer:socket:)`), or unidentified when that failed.
struct AgentPeer: Sendable {
    let caller: AccessCaller
    let pid: pid_t
}

/// The agent's keys in the user's keychains (docs/ssh.md): added to the default keychain,
/// listed from the search list (locked keychains too: the public parts are not secret), signed
/// with after the key's access list or the person allows the caller.
struct KeychainKeyStore: AgentKeyStore {
    typealias Caller = AgentPeer

    let store: KeychainStore
    let gate: AccessGate
    let resolver: IdentityResolver
    let logger: Logger
    /// Asks for a locked keychain's password and unlocks it; false when it stays locked.
    let unlock: @Sendable (_ keychain: String, _ requester: String) -> Bool
    /// Programs every key item trusts, besides the one that added it (docs/ssh.md, "Access").
    static let alwaysTrusted = ["/usr/bin/ssh", "/usr/bin/ssh-keygen"]

    func identities() -> [AgentIdentity] {
        var listed: [AgentIdentity] = []
        for keychain in (try? store.searchList()) ?? [] {
            guard let matches = try? store.freeformMatches(SSHKeyItem.everyKey, native: [:], in: keychain) else { continue }
            for id in matches.ids {
                guard let summary = try? store.itemSummary(id, in: keychain), let identity = SSHKeyItem.identity(summary),
                    !listed.contains(where: { $0.publicBlob == identity.publicBlob })
                else { continue }
                listed.append(identity)
                if listed.count >= AgentLimits.maximumListedKeys { return listed }
            }
        }
        return listed
    }

    func store(_ key: SSHKeyPair, addedBy caller: AgentPeer) throws(AgentRefusal) {
        let keychain: String
        do { keychain = try store.defaultKeychain() } catch { throw AgentRefusal("no default keychain: \(error)") }
        try Self.add(key, to: keychain, trusting: trustedPrograms(adder: caller.caller.identityString), store: store)
    }

    func store(_ key: SSHKeyPair, in keychain: String?, trusting trusted: [String], importedBy caller: AgentPeer) throws(AgentRefusal) {
        // What `-T` names goes into an access list: the list's own checks (count, sizes) apply.
        let list: AccessList
        do { list = try AccessList.validated(trustedPrograms(adder: nil) + trusted) } catch {
            throw AgentRefusal("the programs to trust are not a valid access list: \(error)")
        }
        guard case .applications(let names) = list else { throw AgentRefusal("no access list") }
        let target: String
        do { target = try keychain ?? store.defaultKeychain() } catch { throw AgentRefusal("no default keychain: \(error)") }
        try Self.add(key, to: target, trusting: names, store: store)
    }

    /// Adds (or replaces) the key's item in `keychain`, trusting `trusted`.
    static func add(_ key: SSHKeyPair, to keychain: String, trusting trusted: [String], store: KeychainStore) throws(AgentRefusal) {
        let secret = key.privateKey.withUnsafeBytes { Data($0) }
        defer { SecretWipe.wipe(secret) }
        do {
            _ = try store.addFreeformItem(
                in: keychain, itemClass: .key, label: key.comment, attributes: SSHKeyItem.attributes(of: key), type: nil,
                secret: ItemSecret(value: secret, contentType: SSHKeyItem.contentType), replace: true,
                access: .applications(trusted), derive: SSHKeyItem.derive)
        } catch {
            throw AgentRefusal("cannot store it in \(keychain): \(error)")
        }
    }

    /// `/usr/bin/ssh`, `/usr/bin/ssh-keygen` and the adding program, named as access lists name them.
    func trustedPrograms(adder: String?) -> [String] {
        var trusted = Self.alwaysTrusted.compactMap { try? resolver.identity(ofProgram: $0).string }
        if let adder, !trusted.contains(adder) { trusted.append(adder) }
        return trusted
    }

    func privateKey(for publicBlob: [UInt8], caller: AgentPeer, context: SignatureContext) throws(AgentRefusal) -> SecretBytes? {
        let fingerprint = SSHFingerprint.sha256(publicBlob)
        for keychain in (try? store.searchList()) ?? [] {
            guard let matches = try? store.freeformMatches(SSHKeyItem.query(fingerprint: fingerprint), native: [:], in: keychain),
                let id = matches.ids.first
            else { continue }
            if matches.locked, !unlock(keychain, "\(caller.caller.displayName) (SSH)") {
                throw AgentRefusal("the keychain \(keychain) is locked")
            }
            let label = (try? store.itemSummary(id, in: keychain)).flatMap { SSHKeyItem.identity($0)?.comment } ?? fingerprint
            try checkAccess(id, label: label, in: keychain, caller: caller, context: context)
            do {
                guard let secret = try store.secrets(of: [id], in: keychain)[id] else { continue }
                defer { SecretWipe.wipe(secret.value) }
                let privateKey = SecretBytes(copying: secret.value)
                // A key item whose secret is not the key it lists (or certifies) is refused, not used.
                let expected = (try? SSHCertificate(publicBlob))?.keyBlob ?? publicBlob
                guard (try? SSHKeyPair.publicParts(of: privateKey))?.publicBlob == expected else {
                    throw AgentRefusal("the item in \(keychain) does not hold the key it lists")
                }
                return privateKey
            } catch let refusal as AgentRefusal {
                throw refusal
            } catch {
                throw AgentRefusal("cannot read it from \(keychain): \(error)")
            }
        }
        return nil
    }

    private func checkAccess(_ id: UUID, label: String, in keychain: String, caller: AgentPeer, context: SignatureContext) throws(AgentRefusal) {
        let lists: ItemAccessLists
        do { lists = try store.accessLists([id], in: keychain) } catch { throw AgentRefusal("cannot read its access list: \(error)") }
        let hosts = context.hostKeyFingerprints.last.map { " for the host whose key is \($0)" } ?? ""
        let item = AccessItem(keychain: lists.keychainPath, reference: lists.reference(of: id), label: "SSH key \(label)\(hosts)")
        switch gate.verdict(for: caller.caller, item: item, list: lists.list(of: id)) {
        case .allowed: return
        case .hidden: throw AgentRefusal("\(caller.caller.displayName) may not see it")
        case .mustAsk:
            guard gate.ask(caller.caller, about: [item], interactive: true).allows else {
                throw AgentRefusal("\(caller.caller.identityString ?? caller.caller.displayName) was denied")
            }
        }
    }

    func confirm(_ key: AgentIdentity, caller: AgentPeer, context: SignatureContext) -> Bool {
        // A key added with `ssh-add -c` is asked about for every signature: a fresh connection
        // name, so no earlier answer of the burst applies.
        let once = AccessCaller(connection: caller.caller.connection + ":confirm:\(UUID().uuidString)", identity: caller.caller.identity)
        let item = AccessItem(keychain: "", reference: Array(key.publicBlob), label: "SSH key \(key.comment)")
        defer { gate.connectionLeft(once.connection) }
        let answer = gate.ask(once, about: [item], interactive: true)
        return answer.allows
    }

    func remove(publicBlob: [UInt8]) -> Bool {
        let fingerprint = SSHFingerprint.sha256(publicBlob)
        var removed = false
        for keychain in (try? store.listKeychains()) ?? [] {
            guard let matches = try? store.freeformMatches(SSHKeyItem.query(fingerprint: fingerprint), native: [:], in: keychain) else { continue }
            for id in matches.ids {
                do {
                    try store.deleteItem(id, in: keychain)
                    removed = true
                } catch {
                    logger.notice("ssh agent: cannot delete \(fingerprint) from \(keychain): \(error)")
                }
            }
        }
        return removed
    }

    func removeAll() {
        for keychain in (try? store.listKeychains()) ?? [] {
            guard let matches = try? store.freeformMatches(SSHKeyItem.everyKey, native: [:], in: keychain), !matches.locked else { continue }
            for id in matches.ids {
                guard (try? store.itemSummary(id, in: keychain))?.itemClass == .key else { continue }
                do { try store.deleteItem(id, in: keychain) } catch { logger.notice("ssh agent: cannot delete a key from \(keychain): \(error)") }
            }
        }
    }
}
