import Foundation
import KeywellProtocol
import KeywellSystem
import Logging

/// The secrets of one keychain's AfterFirstUnlock items (`Accessibility.survivesAutomaticLock`),
/// kept so that they stay readable after the idle timer, screen lock or sleep locked the keychain
/// again (docs/access-control.md, "Accessibility"). Each is sealed under a random session key held
/// in libsodium's locked memory, never under the master key, which goes at every lock as before.
/// An explicit lock, the last logout, deleting the keychain or the daemon exiting drops them.
final class SessionSecrets: Sendable {
    private struct State {
        /// Present exactly while copies are kept.
        var key: SecretBytes?
        /// Item UUID → nonce ‖ ciphertext ‖ tag under `key`.
        var sealed: [UUID: Data] = [:]
        /// Copies may be added: from an unlock until the next wipe. A change that was under way
        /// when an explicit lock came must not leave a copy behind it.
        var isOpen = false
        /// Counts wipes, so that copies gathered across one are not kept.
        var wipes = 0
    }

    private let state = Protected(State())

    /// Whether any copy is kept (a locked read looks here only then).
    var isEmpty: Bool { state.read { $0.sealed.isEmpty } }

    var count: Int { state.read { $0.sealed.count } }

    func contains(_ item: UUID) -> Bool { state.read { $0.sealed[item] != nil } }

    /// Where `replaceAll` starts: read before gathering the secrets.
    var mark: Int { state.read { $0.wipes } }

    /// Opens for copies (a keychain created unlocked).
    func open() {
        state.withLock { $0.isOpen = true }
    }

    /// Starts over under a fresh key with exactly `secrets` (at unlock), unless a wipe came
    /// since `mark` (an explicit lock meanwhile: then nothing is kept).
    func replaceAll(_ secrets: [(item: UUID, secret: Data)], keychain: UUID, since mark: Int) {
        let key = Sodium.randomKey()
        var sealed: [UUID: Data] = [:]
        sealed.reserveCapacity(secrets.count)
        for (item, secret) in secrets {
            sealed[item] = Sodium.seal(secret, key: key, associatedData: Self.associatedData(keychain: keychain, item: item))
        }
        state.withLock { state in
            guard state.wipes == mark else { return }
            state.key = sealed.isEmpty ? nil : key
            state.sealed = sealed
            state.isOpen = true
        }
    }

    /// Keeps (or replaces) one item's copy, while open.
    func keep(_ secret: Data, for item: UUID, keychain: UUID) {
        state.withLock { state in
            guard state.isOpen else { return }
            let key = state.key ?? Sodium.randomKey()
            state.key = key
            state.sealed[item] = Sodium.seal(secret, key: key, associatedData: Self.associatedData(keychain: keychain, item: item))
        }
    }

    func remove(_ items: some Sequence<UUID>) {
        state.withLock { state in
            for item in items { state.sealed[item] = nil }
            if state.sealed.isEmpty { state.key = nil }
        }
    }

    /// Drops every copy and the key (SecretBytes zeroes it once no read still uses it).
    func wipe() {
        state.withLock { $0 = State(wipes: $0.wipes &+ 1) }
    }

    /// The item's secret, or nil when no copy is kept for it.
    func secret(for item: UUID, keychain: UUID) throws(KeychainError) -> Data? {
        guard let (key, sealed) = state.read({ state in state.key.flatMap { key in state.sealed[item].map { (key, $0) } } }) else {
            return nil
        }
        return try Sodium.open(sealed, key: key, associatedData: Self.associatedData(keychain: keychain, item: item))
    }

    private static let domain = Array("keywell session copy v1\0".utf8)

    /// Binds a copy to its keychain and item, so no copy answers for another.
    private static func associatedData(keychain: UUID, item: UUID) -> Data {
        var bytes = domain
        withUnsafeBytes(of: keychain.uuid) { bytes += $0 }
        withUnsafeBytes(of: item.uuid) { bytes += $0 }
        return Data(bytes)
    }
}

/// Keeping a keychain's session copies in step with its items.
extension KeychainFile {
    /// At unlock: a copy of every AfterFirstUnlock item's secret, from items whose MACs check
    /// (a `pdmn` edited on disk must not make a secret readable while locked). One decryption
    /// per such item. A keychain whose items fail their check keeps no copies; its reads then
    /// fail as they would have.
    func keepSessionCopies(logger: Logger) {
        let mark = sessionSecrets.mark
        guard let (key, integrity) = try? keys() else { return }
        do throws(KeychainError) {
            let items = try database.snapshot { db in
                var items: [KeychainItem] = []
                for itemClass in ItemClass.allCases {
                    for accessibility in Accessibility.allCases where accessibility.survivesAutomaticLock {
                        let filter = ItemFilter(itemClass: itemClass, attributes: [.accessibility: .text(accessibility.rawValue)])
                        items += try ItemTable.fetch(filter, limit: .all, columns: .keyAndSecret, db)
                    }
                }
                try ItemIntegrity.check(items, keychain: uuid, key: integrity, path: location.path, db)
                return items
            }
            var secrets: [(item: UUID, secret: Data)] = []
            secrets.reserveCapacity(items.count)
            for item in items { secrets.append((item.uuid, try ItemSealing.open(item, keychain: uuid, key: key))) }
            defer { for entry in secrets { SecretWipe.wipe(entry.secret) } }
            sessionSecrets.replaceAll(secrets, keychain: uuid, since: mark)
        } catch {
            sessionSecrets.wipe()
            logger.warning("keeping no AfterFirstUnlock secrets of \(location.displayName): \(error.wireMessage)")
        }
    }

    /// After `items` were added or changed while unlocked: keeps a copy of each that is now
    /// AfterFirstUnlock, drops the copy of each that no longer is. `secret` gives a plaintext
    /// already at hand; otherwise it is opened with the master key (no copy when that fails).
    func refreshSessionCopies(of items: [KeychainItem], secret: (KeychainItem) -> Data? = { _ in nil }) {
        for item in items {
            guard item.accessibility.survivesAutomaticLock else {
                sessionSecrets.remove([item.uuid])
                continue
            }
            if let plaintext = secret(item) {
                sessionSecrets.keep(plaintext, for: item.uuid, keychain: uuid)
            } else if let key = try? masterKey(), let plaintext = try? ItemSealing.open(item, keychain: uuid, key: key) {
                sessionSecrets.keep(plaintext, for: item.uuid, keychain: uuid)
                SecretWipe.wipe(plaintext)
            } else {
                sessionSecrets.remove([item.uuid])
            }
        }
    }
}
