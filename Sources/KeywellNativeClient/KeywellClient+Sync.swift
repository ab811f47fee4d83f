import FoundationEssentials
import KeywellAPI
import KeywellDBus
import KeywellProtocol

/// Keywell's own: a keychain mirrored into a folder that a sync engine carries to the user's
/// other machines (docs/sync.md). An empty keychain name is the default keychain.
extension KeywellClient {
    /// How long `enable`, `join` and `rekey` may take: a key derivation, then every item written
    /// into the folder or merged from it.
    public static let syncTimeout: Duration = .seconds(300)

    /// Starts mirroring `keychain` into `folder` (absolute), or with `join` merges the mirror
    /// the folder holds; `errSecAuthFailed` for a wrong password (nothing changed then).
    public func syncEnable(_ keychain: String, folder: String, password: [UInt8], join: Bool) throws(KeychainError) {
        _ = try call(.syncEnable, [.string(keychain), .string(folder), .bytes(password), .bool(join)], timeout: Self.syncTimeout)
    }

    /// `SyncStatusKey`'s keys.
    public func syncStatus(_ keychain: String) throws(KeychainError) -> WireDictionary {
        try WireCodec.replyDictionary(try call(.syncStatus, [.string(keychain)]).first, of: .syncStatus)
    }

    /// One dictionary per losing version kept (`SyncConflictKey`'s keys), oldest first.
    public func syncConflicts(_ keychain: String) throws(KeychainError) -> [WireDictionary] {
        let reply = try call(.syncConflicts, [.string(keychain)])
        guard let elements = reply.first?.arrayElements else { throw KeychainError(SecStatus.io, detail: "SyncConflicts reply is not an array") }
        var result: [WireDictionary] = []
        for element in elements { result.append(try WireCodec.replyDictionary(element, of: .syncConflicts)) }
        return result
    }

    /// A kept version's secret; the caller wipes it.
    public func syncConflictSecret(_ keychain: String, version: Int64) throws(KeychainError) -> [UInt8] {
        let reply = try call(.syncConflictSecret, [.string(keychain), .int64(version)])
        guard let bytes = reply.first?.bytesValue else { throw KeychainError(SecStatus.io, detail: "SyncConflictSecret reply without bytes") }
        return bytes
    }

    public func syncDisable(_ keychain: String) throws(KeychainError) {
        _ = try call(.syncDisable, [.string(keychain)])
    }

    public func syncRekey(_ keychain: String, password: [UInt8]) throws(KeychainError) {
        _ = try call(.syncRekey, [.string(keychain), .bytes(password)], timeout: Self.syncTimeout)
    }
}
