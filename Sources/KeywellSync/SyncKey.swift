import Foundation
import KeywellCore

/// The random 32-byte key a synced keychain shares with its other machines (docs/sync.md,
/// "Keys"). Kept inside each keychain sealed under its master key; in the folder only wrapped
/// under the sync password (`SyncHeader`). Two subkeys do its two jobs, so neither use of the
/// key tells anything about the other.
public struct SyncKey: Sendable {
    public let key: SecretBytes
    let sealingKey: SecretBytes
    let tagKey: SecretBytes
    /// 16 bytes naming the key (not secret: a hash of it). Records name the key they were sealed
    /// under, so a record from before a `sync rekey` is told apart from a damaged one.
    public let id: [UInt8]

    public init(_ key: SecretBytes) {
        precondition(key.count == Sodium.keyLength)
        self.key = key
        sealingKey = Sodium.deriveSubkey(of: key, id: 1, context: "kwsync01")
        tagKey = Sodium.deriveSubkey(of: key, id: 2, context: "kwsync01")
        let idKey = Sodium.deriveSubkey(of: key, id: 3, context: "kwsync01")
        id = Array(Sodium.mac(UnsafeRawBufferPointer(start: nil, count: 0), key: idKey).prefix(16))
    }

    public static func random() -> SyncKey { SyncKey(Sodium.randomKey()) }

    /// The item's tag: its identity hashed under the key, the same on every machine.
    public func tag(of identity: ItemIdentity) -> ItemTag {
        let bytes = identity.canonicalBytes
        return ItemTag(bytes: bytes.withUnsafeBytes { Sodium.mac($0, key: tagKey) })!
    }
}
