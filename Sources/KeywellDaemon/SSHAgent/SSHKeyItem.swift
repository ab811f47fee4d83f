import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSSHAgent
import KeywellSSHWire

/// How an SSH key is kept as a keychain item (docs/ssh.md, "How a key is stored"): one item of
/// class `keys` per private key, whose sealed secret is the private key in the agent's encoding,
/// whose label is the key's comment, and whose free-form attributes say what the agent lists
/// without unlocking anything: the public key, its fingerprint and the key's certificates.
enum SSHKeyItem {
    /// Marks the items the agent serves; every key item has it.
    static let markerAttribute = "keywell:ssh-key"
    static let markerValue = "1"
    /// `SHA256:…` of the plain key, as `ssh-add -l` prints it for the key and its certificates
    /// (also the item's account, which names it in `dump-keychain`).
    static let fingerprintAttribute = "fprt"
    /// The plain public key blob, base64.
    static let publicKeyAttribute = "pubk"
    /// The key's OpenSSH certificates, base64 each, separated by spaces, oldest first; absent
    /// when it has none.
    static let certificatesAttribute = "cert"
    /// `removed` once the plain key was removed (`ssh-add -d`) while a certificate stays: the
    /// item then serves the certificates alone, as OpenSSH's agent would.
    static let plainKeyAttribute = "plain"
    static let plainKeyRemoved = "removed"
    /// The content type of the secret.
    static let contentType = "application/x-ssh-agent-key"

    static func query(fingerprint: String) -> [String: String] {
        [markerAttribute: markerValue, fingerprintAttribute: fingerprint]
    }

    static let everyKey = [markerAttribute: markerValue]

    /// The native attributes a key item shows: its comment as the label, its fingerprint as the account.
    static func derive(_ label: String, _ attributes: [String: String]) -> [ItemAttribute: AttributeValue] {
        [.label: .text(label), .account: .text(attributes[fingerprintAttribute] ?? "")]
    }

    /// What one key item lists: the plain key (unless removed) and its certificates, each an
    /// identity of its own as in OpenSSH's agent.
    struct Entries: Equatable {
        let keyBlob: [UInt8]
        private(set) var plainListed: Bool
        private(set) var certificates: [[UInt8]]

        /// The entries of a key that is not stored yet: the key, or the certificate alone.
        init(new key: SSHKeyPair) {
            keyBlob = key.keyBlob
            plainListed = key.keyBlob == key.publicBlob
            certificates = plainListed ? [] : [key.publicBlob]
        }

        /// An item's entries from its free-form attributes; nil for an item that is not a
        /// well-formed key item. Reads at most `AgentLimits.maximumCertificatesPerKey`
        /// certificates (the attribute's size is the keychain's cap on any value).
        init?(_ freeform: [String: String]) {
            guard freeform[markerAttribute] == markerValue, let encoded = freeform[publicKeyAttribute],
                let blob = Data(base64Encoded: encoded)
            else { return nil }
            keyBlob = Array(blob)
            plainListed = freeform[plainKeyAttribute] != plainKeyRemoved
            let words = (freeform[certificatesAttribute] ?? "").split(separator: " ").prefix(AgentLimits.maximumCertificatesPerKey)
            certificates = words.compactMap { Data(base64Encoded: String($0)).map(Array.init) }
        }

        var isEmpty: Bool { !plainListed && certificates.isEmpty }

        /// The listed blobs, the plain key first, as OpenSSH's agent lists a key added with its certificate.
        var listed: [[UInt8]] { (plainListed ? [keyBlob] : []) + certificates }

        func lists(_ blob: [UInt8]) -> Bool { listed.contains(blob) }

        /// Adds the key or one of its certificates. A certificate already held stays where it
        /// is; at the cap, those that have expired make room; past it, the new one is refused.
        mutating func add(_ key: SSHKeyPair, now: UInt64) throws(AgentRefusal) {
            guard key.keyBlob == keyBlob else { throw AgentRefusal("the item holds another key") }
            if key.publicBlob == keyBlob {
                plainListed = true
                return
            }
            guard !certificates.contains(key.publicBlob) else { return }
            var kept = certificates + [key.publicBlob]
            if kept.count > AgentLimits.maximumCertificatesPerKey {
                kept.removeAll { (try? SSHCertificate($0))?.hasExpired(at: now) ?? false }
            }
            guard kept.count <= AgentLimits.maximumCertificatesPerKey else {
                throw AgentRefusal("the key already has \(AgentLimits.maximumCertificatesPerKey) certificates that have not expired")
            }
            guard Self.encode(kept).utf8.count <= ServiceLimits.bytesPerAttributeValue else {
                throw AgentRefusal("the key's certificates would exceed \(ServiceLimits.bytesPerAttributeValue) bytes in base64")
            }
            certificates = kept
        }

        /// Removes one listed blob; false when the item does not list it.
        mutating func remove(_ blob: [UInt8]) -> Bool {
            if blob == keyBlob {
                guard plainListed else { return false }
                plainListed = false
                return true
            }
            guard let index = certificates.firstIndex(of: blob) else { return false }
            certificates.remove(at: index)
            return true
        }

        /// The item's free-form attributes.
        var attributes: [String: String] {
            var attributes = [markerAttribute: markerValue, fingerprintAttribute: SSHFingerprint.sha256(keyBlob),
                              publicKeyAttribute: Base64.encode(keyBlob)]
            if !certificates.isEmpty { attributes[certificatesAttribute] = Self.encode(certificates) }
            if !plainListed { attributes[plainKeyAttribute] = plainKeyRemoved }
            return attributes
        }

        private static func encode(_ certificates: [[UInt8]]) -> String {
            certificates.map { Base64.encode($0) }.joined(separator: " ")
        }
    }

    /// A key item's entries; nil for an item that is not a well-formed `keys` item.
    static func entries(of summary: ItemSummary) -> Entries? {
        summary.itemClass == .key ? Entries(summary.freeform) : nil
    }

    /// The listed identities of an item's summary; none for an item that is not a well-formed key item.
    static func identities(_ summary: ItemSummary) -> [AgentIdentity] {
        entries(of: summary)?.listed.map { AgentIdentity(publicBlob: $0, comment: comment(summary)) } ?? []
    }

    /// The item's label: the comment of the key's latest add.
    static func comment(_ summary: ItemSummary) -> String {
        if case .text(let label)? = summary.attributes[.label] { return label }
        return ""
    }
}
