import CSodium
import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSystem

/// Each sandboxed app's master secret: an item of the default keychain found by its app id,
/// made on first use with `PortalNames.secretLength` random bytes. One look-up-or-create runs at
/// a time, so two first calls of an app never make two different secrets.
final class AppSecrets: Sendable {
    private let store: KeychainStore
    /// Serialises the look-up-or-create; guards no value of its own.
    private let lookUpOrCreate = Protected(())

    init(store: KeychainStore) {
        self.store = store
    }

    /// The keychain the secrets live in, and whether it is locked now.
    func keychain() throws(KeychainError) -> (name: String, locked: Bool) {
        let name = try store.registry.defaultKeychain()
        return (name, try store.locking.isLocked(name))
    }

    /// The app's secret in `keychain` (unlocked), made and stored first if it has none, trusting
    /// the Flatpak app it is for (not xdg-desktop-portal, which asks for it; a Snap id names no
    /// identity, so its item follows the keychain's default: docs/portal.md). When
    /// several items carry the app id (made by hand, or a keyring migrated twice), the one with
    /// the smallest identifier wins, the same one every time.
    func secret(for app: PortalAppID, in keychain: String) throws(KeychainError) -> (secret: Data, created: Bool) {
        try lookUpOrCreate.withLock { _ throws(KeychainError) -> (secret: Data, created: Bool) in
            let ids = try store.secretServiceSearch([PortalNames.appIDAttribute: app.value], in: keychain)
            if let chosen = ids.min(by: { $0.uuidString < $1.uuidString }),
               let found = try store.secretServiceSecrets([chosen], in: keychain)[chosen] {
                return (found.value, false)
            }
            let value = Self.randomSecret()
            _ = try store.secretServiceCreateItem(
                in: keychain, label: PortalNames.itemLabel(for: app.value),
                attributes: [PortalNames.appIDAttribute: app.value, SecretServiceSchema.attribute: PortalNames.itemSchema],
                type: nil, secret: SecretServiceSecret(value: value, contentType: PortalNames.secretContentType), replace: false,
                creator: app.flatpakIdentity)
            return (value, true)
        }
    }

    /// From libsodium's generator (the kernel's), as every key of the engine.
    private static func randomSecret() -> Data {
        var bytes = Data(count: PortalNames.secretLength)
        bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return bytes
    }
}
