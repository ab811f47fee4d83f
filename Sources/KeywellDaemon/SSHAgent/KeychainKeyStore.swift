import Foundation
import KeywellAccess
import KeywellCore
import KeywellIdentity
import KeywellProtocol
import KeywellSSHAgent
import KeywellSSHWire
import KeywellSystem
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

    /// Adds and removals read an item's entries and write them back: one at a time.
    private static let writing = Protected(())

    func identities() -> [AgentIdentity] {
        var listed: [AgentIdentity] = []
        for keychain in (try? store.registry.searchList()) ?? [] {
            guard let matches = try? store.freeformItems.freeformMatches(SSHKeyItem.everyKey, native: [:], in: keychain) else { continue }
            for id in matches.ids {
                guard let summary = try? store.freeformItems.itemSummary(id, in: keychain) else { continue }
                for identity in SSHKeyItem.identities(summary) where !listed.contains(where: { $0.publicBlob == identity.publicBlob }) {
                    listed.append(identity)
                    if listed.count >= AgentLimits.maximumListedKeys { return listed }
                }
            }
        }
        return listed
    }

    func store(_ key: SSHKeyPair, addedBy caller: AgentPeer) throws(AgentRefusal) {
        let defaultKeychain: String
        do { defaultKeychain = try store.registry.defaultKeychain() } catch { throw AgentRefusal("no default keychain: \(error)") }
        // The key's item where it already is (a certificate joins its key), else a new one in
        // the default keychain.
        let keychains = [defaultKeychain] + ((try? store.registry.searchList()) ?? [])
        let holding = keychains.first { keychain in
            guard let matches = try? store.freeformItems.freeformMatches(SSHKeyItem.query(fingerprint: key.fingerprint), native: [:], in: keychain)
            else { return false }
            return !matches.locked && !matches.ids.isEmpty
        }
        try Self.add(key, to: holding ?? defaultKeychain, trusting: trustedPrograms(adder: caller.caller.identityString), store: store)
    }

    func store(_ key: SSHKeyPair, in keychain: String?, trusting trusted: [String], importedBy caller: AgentPeer) throws(AgentRefusal) {
        // What `-T` names goes into an access list: the list's own checks (count, sizes) apply.
        let list: AccessList
        do { list = try AccessList.validated(trustedPrograms(adder: nil) + trusted) } catch {
            throw AgentRefusal("the programs to trust are not a valid access list: \(error)")
        }
        guard case .applications(let names) = list else { throw AgentRefusal("no access list") }
        let target: String
        do { target = try keychain ?? store.registry.defaultKeychain() } catch { throw AgentRefusal("no default keychain: \(error)") }
        try Self.add(key, to: target, trusting: names, store: store)
    }

    /// Adds the key, or a certificate of it, to the key's item in `keychain` (its comment
    /// updated, its access list kept), or makes that item, trusting `trusted`.
    static func add(_ key: SSHKeyPair, to keychain: String, trusting trusted: [String], store: KeychainStore) throws(AgentRefusal) {
        try writing.withLock { _ throws(AgentRefusal) in
            do {
                let matches = try store.freeformItems.freeformMatches(SSHKeyItem.query(fingerprint: key.fingerprint), native: [:], in: keychain)
                if let id = matches.ids.first, var entries = SSHKeyItem.entries(of: try store.freeformItems.itemSummary(id, in: keychain)) {
                    try entries.add(key, now: UInt64(max(0, Date().timeIntervalSince1970)))
                    try store.freeformItems.updateFreeformItem(id, in: keychain, label: key.comment, attributes: entries.attributes, derive: SSHKeyItem.derive)
                    return
                }
                let secret = key.privateKey.withUnsafeBytes { Data($0) }
                defer { SecretWipe.wipe(secret) }
                _ = try store.freeformItems.addFreeformItem(
                    in: keychain, itemClass: .key, label: key.comment, attributes: SSHKeyItem.Entries(new: key).attributes, type: nil,
                    secret: ItemSecret(value: secret, contentType: SSHKeyItem.contentType), replace: false,
                    access: .applications(trusted), derive: SSHKeyItem.derive)
            } catch let refusal as AgentRefusal {
                throw refusal
            } catch {
                throw AgentRefusal("cannot store it in \(keychain): \(error)")
            }
        }
    }

    /// `/usr/bin/ssh`, `/usr/bin/ssh-keygen` and the adding program, named as access lists name them.
    func trustedPrograms(adder: String?) -> [String] {
        var trusted = Self.alwaysTrusted.compactMap { try? resolver.identity(ofProgram: $0).string }
        if let adder, !trusted.contains(adder) { trusted.append(adder) }
        return trusted
    }

    func privateKey(for publicBlob: [UInt8], caller: AgentPeer, context: SignatureContext) throws(AgentRefusal) -> SecretBytes? {
        let keyBlob = SSHKeyPair.keyBlob(of: publicBlob)
        let fingerprint = SSHFingerprint.sha256(keyBlob)
        for keychain in (try? store.registry.searchList()) ?? [] {
            guard let matches = try? store.freeformItems.freeformMatches(SSHKeyItem.query(fingerprint: fingerprint), native: [:], in: keychain) else { continue }
            // Only an item that lists this very blob signs with it (a removed key's certificate does not).
            let listing = matches.ids.lazy.compactMap { id in (try? store.freeformItems.itemSummary(id, in: keychain)).map { (id: id, summary: $0) } }
                .first { SSHKeyItem.entries(of: $0.summary)?.lists(publicBlob) ?? false }
            guard let (id, summary) = listing else { continue }
            if matches.locked, !unlock(keychain, "\(caller.caller.displayName) (SSH)") {
                throw AgentRefusal("the keychain \(keychain) is locked")
            }
            let label = SSHKeyItem.comment(summary)
            try checkAccess(id, label: label.isEmpty ? fingerprint : label, in: keychain, caller: caller, context: context)
            do {
                guard let secret = try store.freeformItems.secrets(of: [id], in: keychain)[id] else { continue }
                defer { SecretWipe.wipe(secret.value) }
                let privateKey = SecretBytes(copying: secret.value)
                // A key item whose secret is not the key it lists (or certifies) is refused, not used.
                guard (try? SSHKeyPair.publicParts(of: privateKey))?.publicBlob == keyBlob else {
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
        do { lists = try store.freeformItems.accessLists([id], in: keychain) } catch { throw AgentRefusal("cannot read its access list: \(error)") }
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

    /// Removes the key or the certificate from every item listing it, as OpenSSH's agent removes
    /// one identity: the item goes when it lists nothing more.
    func remove(publicBlob: [UInt8]) -> Bool {
        let fingerprint = SSHFingerprint.sha256(SSHKeyPair.keyBlob(of: publicBlob))
        return Self.writing.withLock { _ in
            var removed = false
            for keychain in (try? store.registry.listKeychains()) ?? [] {
                guard let matches = try? store.freeformItems.freeformMatches(SSHKeyItem.query(fingerprint: fingerprint), native: [:], in: keychain) else { continue }
                for id in matches.ids {
                    guard let summary = try? store.freeformItems.itemSummary(id, in: keychain), var entries = SSHKeyItem.entries(of: summary),
                        entries.remove(publicBlob)
                    else { continue }
                    do {
                        if entries.isEmpty {
                            try store.freeformItems.deleteItem(id, in: keychain)
                        } else {
                            try store.freeformItems.updateFreeformItem(id, in: keychain, label: nil, attributes: entries.attributes, derive: SSHKeyItem.derive)
                        }
                        removed = true
                    } catch {
                        logger.notice("ssh agent: cannot remove \(fingerprint) from \(keychain): \(error)")
                    }
                }
            }
            return removed
        }
    }

    func removeAll() {
        for keychain in (try? store.registry.listKeychains()) ?? [] {
            guard let matches = try? store.freeformItems.freeformMatches(SSHKeyItem.everyKey, native: [:], in: keychain), !matches.locked else { continue }
            for id in matches.ids {
                guard (try? store.freeformItems.itemSummary(id, in: keychain))?.itemClass == .key else { continue }
                do { try store.freeformItems.deleteItem(id, in: keychain) } catch { logger.notice("ssh agent: cannot delete a key from \(keychain): \(error)") }
            }
        }
    }
}
