import Foundation
import KeywellCore
import KeywellSSHAgent
import KeywellSSHWire

/// How an SSH key is kept as a keychain item (docs/ssh.md, "How a key is stored"): an item of
/// class `keys` whose sealed secret is the private key in the agent's encoding, whose label is the
/// key's comment, and whose free-form attributes say what the agent lists without unlocking
/// anything: the public key and its fingerprint.
enum SSHKeyItem {
    /// Marks the items the agent serves; every key item has it.
    static let markerAttribute = "keywell:ssh-key"
    static let markerValue = "1"
    /// `SHA256:…`, as `ssh-add -l` prints it (also the item's account, which names it in `dump-keychain`).
    static let fingerprintAttribute = "fprt"
    /// The public key blob, base64.
    static let publicKeyAttribute = "pubk"
    /// The content type of the secret.
    static let contentType = "application/x-ssh-agent-key"

    static func attributes(of key: SSHKeyPair) -> [String: String] {
        [markerAttribute: markerValue, fingerprintAttribute: key.fingerprint, publicKeyAttribute: Base64.encode(key.publicBlob)]
    }

    static func query(fingerprint: String) -> [String: String] {
        [markerAttribute: markerValue, fingerprintAttribute: fingerprint]
    }

    static let everyKey = [markerAttribute: markerValue]

    /// The native attributes a key item shows: its comment as the label, its fingerprint as the account.
    static func derive(_ label: String, _ attributes: [String: String]) -> [ItemAttribute: AttributeValue] {
        [.label: .text(label), .account: .text(attributes[fingerprintAttribute] ?? "")]
    }

    /// The listed identity of an item's summary; nil for an item that is not a well-formed key item.
    static func identity(_ summary: ItemSummary) -> AgentIdentity? {
        guard summary.itemClass == .key, summary.freeform[markerAttribute] == markerValue,
            let encoded = summary.freeform[publicKeyAttribute], let blob = Data(base64Encoded: encoded)
        else { return nil }
        let comment: String
        if case .text(let label)? = summary.attributes[.label] { comment = label } else { comment = "" }
        return AgentIdentity(publicBlob: Array(blob), comment: comment)
    }
}
