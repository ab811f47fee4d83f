import Foundation
import KeywellAccess
import KeywellCore
import KeywellProtocol
import KeywellSystem

/// The `session` collection: in memory only, never written to disk, always unlocked, emptied
/// when the user's last login session closes (PAM tells the daemon), when the daemon exits, or
/// when its session bus goes away. Apps and test suites
/// written for gnome-keyring keep throwaway secrets here. Its items trust any application,
/// except a sandboxed app's, which trust that app alone (docs/secret-service.md, "Access control").
final class MemoryCollection: SecretCollection, Sendable {
    private struct StoredItem {
        var label: String
        var attributes: [String: String]
        var type: String?
        var secret: SecretServiceSecret
        let created: Date
        var modified: Date
        let access: AccessList
    }

    /// Everything that changes, only touched under the lock.
    private struct Contents {
        var items: [UUID: StoredItem] = [:]
        var order: [UUID] = []
        var label = "Session"
        var modified = Date()
    }

    let id = CollectionID.session
    private let contents = Protected(Contents())
    private let created = Date()

    func label() -> String { contents.withLock { $0.label } }

    func setLabel(_ label: String) {
        contents.withLock {
            $0.label = label
            $0.modified = Date()
        }
    }

    /// Forgets every item (the login session ended, or the collection was deleted); returns
    /// the items it held, oldest first.
    @discardableResult
    func clear() -> [UUID] {
        contents.withLock { contents in
            let removed = contents.order
            contents.items.removeAll()
            contents.order.removeAll()
            if !removed.isEmpty { contents.modified = Date() }
            return removed
        }
    }

    func isLocked() -> Bool { false }
    func times() -> (created: Date, modified: Date) { (created, contents.withLock { $0.modified }) }
    func itemIDs() -> [UUID] { contents.withLock { $0.order } }
    func itemIDs(atMost limit: Int) -> [UUID] { contents.withLock { Array($0.order.prefix(max(0, limit))) } }

    func search(_ attributes: [String: String]) -> [UUID] {
        contents.withLock { contents in
            contents.order.filter { id in
                let stored = contents.items[id]!.attributes
                return attributes.allSatisfy { stored[$0.key] == $0.value }
            }
        }
    }

    func searchWithLockState(_ attributes: [String: String]) -> (ids: [UUID], locked: Bool) {
        (search(attributes), false)
    }

    func item(_ id: UUID) throws(KeychainError) -> SecretServiceItem {
        try contents.withLock { contents throws(KeychainError) -> SecretServiceItem in
            guard let stored = contents.items[id] else { throw KeychainError(SecStatus.itemNotFound) }
            return SecretServiceItem(
                id: id, label: stored.label, attributes: stored.attributes,
                type: stored.type ?? stored.attributes["xdg:schema"] ?? "org.freedesktop.Secret.Generic",
                created: stored.created, modified: stored.modified, madeBySecretService: true)
        }
    }

    func contains(_ id: UUID) -> Bool { contents.withLock { $0.items[id] != nil } }

    func secrets(_ ids: [UUID]) -> [UUID: SecretServiceSecret] {
        contents.withLock { contents in
            var result: [UUID: SecretServiceSecret] = [:]
            // Copies: callers wipe what they are given once it is sent.
            for id in ids { result[id] = contents.items[id].map { Self.ownCopy($0.secret) } }
            return result
        }
    }

    /// Named by the item's UUID within `session`: nothing on disk to write Always Allow into, so
    /// an allowance for a session item lasts as long as its connection.
    func access(_ ids: [UUID]) -> CollectionAccess {
        let lists = contents.withLock { contents in ids.map { contents.items[$0]?.access ?? .anyApplication } }
        return CollectionAccess(lists: lists) { index in
            AccessItem(keychain: ObjectPaths.sessionCollectionSegment, reference: withUnsafeBytes(of: ids[index].uuid) { Array($0) }, label: "")
        }
    }

    func createItem(label: String, attributes: [String: String], type: String?, secret: SecretServiceSecret,
                    replace: Bool, times: SecretServiceItemTimes?, creator: AccessCaller?) throws(KeychainError) -> (id: UUID, replaced: Bool) {
        let secret = Self.ownCopy(secret)
        let access: AccessList = creator.flatMap { $0.isSandboxed ? $0.identityString : nil }.map { .applications([$0]) } ?? .anyApplication
        return try contents.withLock { contents throws(KeychainError) -> (id: UUID, replaced: Bool) in
            let now = Date()
            // A match the creator may not use is left alone (a sandboxed app's own item is made
            // beside it) or refused, as in a keychain.
            let candidate = replace ? contents.order.first(where: { contents.items[$0]!.attributes == attributes }) : nil
            let replacement = candidate.map { id in
                creator.map { SecretServiceAccess.replacement(of: contents.items[id]!.access, by: $0) } ?? .replace
            }
            if replacement == .refuse {
                throw KeychainError(SecStatus.interactionNotAllowed, detail: "the item it would replace is locked for this application")
            }
            contents.modified = now
            if let existing = candidate, replacement == .replace {
                contents.items[existing]!.label = label
                contents.items[existing]!.type = type
                contents.items[existing]!.secret = secret
                contents.items[existing]!.modified = times?.modified ?? now
                return (existing, true)
            }
            let id = UUID()
            contents.items[id] = StoredItem(label: label, attributes: attributes, type: type, secret: secret,
                                            created: times?.created ?? now, modified: times?.modified ?? now, access: access)
            contents.order.append(id)
            return (id, false)
        }
    }

    func updateItem(_ id: UUID, label: String?, attributes: [String: String]?) throws(KeychainError) {
        try change(id) { item in
            if let label { item.label = label }
            if let attributes { item.attributes = attributes }
        }
    }

    func setSecret(_ secret: SecretServiceSecret, of id: UUID) throws(KeychainError) {
        let secret = Self.ownCopy(secret)
        try change(id) { $0.secret = secret }
    }

    /// The secret with storage of its own: the request's copy is wiped after the call.
    private static func ownCopy(_ secret: SecretServiceSecret) -> SecretServiceSecret {
        SecretServiceSecret(value: SecretWipe.ownCopy(secret.value), contentType: secret.contentType)
    }

    func deleteItem(_ id: UUID) throws(KeychainError) {
        try contents.withLock { contents throws(KeychainError) in
            guard contents.items.removeValue(forKey: id) != nil else { throw KeychainError(SecStatus.itemNotFound) }
            contents.order.removeAll { $0 == id }
            contents.modified = Date()
        }
    }

    private func change(_ id: UUID, _ body: (inout StoredItem) -> Void) throws(KeychainError) {
        try contents.withLock { contents throws(KeychainError) in
            guard contents.items[id] != nil else { throw KeychainError(SecStatus.itemNotFound) }
            body(&contents.items[id]!)
            contents.items[id]!.modified = Date()
            contents.modified = Date()
        }
    }
}
