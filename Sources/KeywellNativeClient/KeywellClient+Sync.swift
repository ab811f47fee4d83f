import FoundationEssentials
import KeywellAPI
import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// Keywell's own: a keychain mirrored into a folder that a sync engine carries to the user's
/// other machines (docs/sync.md). An empty keychain name is the default keychain.
extension KeywellClient {
    /// How long `enable`, `join` and `rekey` may take: a key derivation, then every item written
    /// into the folder or merged from it.
    public static let syncTimeout: Duration = .seconds(300)

    /// Starts mirroring `keychain` into `folder` (absolute), or with `join` merges the mirror
    /// the folder holds; `errSecAuthFailed` for a wrong password (nothing changed then).
    public func syncEnable(_ keychain: String, folder: String, password: SecretBytes, join: Bool) throws(KeychainError) {
        _ = try call(.syncEnable, sending: [password], timeout: Self.syncTimeout) { [.string(keychain), .string(folder), $0[0], .bool(join)] }
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

    /// A kept version's secret, in locked memory (the reply's decoded array is wiped).
    public func syncConflictSecret(_ keychain: String, version: Int64) throws(KeychainError) -> SecretBytes {
        var reply = try call(.syncConflictSecret, [.string(keychain), .int64(version)])
        guard var bytes = reply.first?.bytesValue else { throw KeychainError(SecStatus.io, detail: "SyncConflictSecret reply without bytes") }
        reply.removeAll()
        defer { PasswordBytes.wipe(&bytes) }
        return SecretBytes(copying: bytes)
    }

    public func syncDisable(_ keychain: String) throws(KeychainError) {
        _ = try call(.syncDisable, [.string(keychain)])
    }

    public func syncRekey(_ keychain: String, password: SecretBytes) throws(KeychainError) {
        _ = try call(.syncRekey, sending: [password], timeout: Self.syncTimeout) { [.string(keychain), $0[0]] }
    }
}
