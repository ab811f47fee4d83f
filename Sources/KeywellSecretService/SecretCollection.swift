import Foundation
import KeywellAccess
import KeywellCore
import KeywellProtocol

/// One collection's items, whatever keeps them: a keychain file, or memory for `session`.
/// Errors are the engine's (`errSecInteractionNotAllowed` while locked, `errSecItemNotFound`…);
/// `SecretServiceError` turns them into Secret Service errors.
protocol SecretCollection: Sendable {
    var id: CollectionID { get }
    func label() throws(KeychainError) -> String
    func setLabel(_ label: String) throws(KeychainError)
    func isLocked() throws(KeychainError) -> Bool
    func times() throws(KeychainError) -> (created: Date, modified: Date)
    func itemIDs() throws(KeychainError) -> [UUID]
    /// The oldest `limit` items: enough to tell whether there are more than `limit - 1`
    /// without reading a big collection's whole list.
    func itemIDs(atMost limit: Int) throws(KeychainError) -> [UUID]
    func search(_ attributes: [String: String]) throws(KeychainError) -> [UUID]
    /// `search` and `isLocked` together: for a keychain, one look-up of its file instead of two.
    func searchWithLockState(_ attributes: [String: String]) throws(KeychainError) -> (ids: [UUID], locked: Bool)
    func item(_ id: UUID) throws(KeychainError) -> SecretServiceItem
    func contains(_ id: UUID) throws(KeychainError) -> Bool
    /// Secrets of the items that exist; needs the collection unlocked.
    func secrets(_ ids: [UUID]) throws(KeychainError) -> [UUID: SecretServiceSecret]
    /// The access lists of `ids`, and how an access question names each.
    func access(_ ids: [UUID]) throws(KeychainError) -> CollectionAccess
    /// The read of every hot path (SearchItems, GetSecret(s), KWallet's reads): the matches of
    /// `selection` with `screen`'s verdict on each and, with `secrets`, the allowed ones'
    /// secrets; for a keychain one statement per 64 items in one transaction
    /// (`KeychainStore.screenedRead`). Locked: verdicts, no secrets, `locked` true.
    func read(_ selection: CollectionSelection, screen: (any ItemAccessScreening)?, secrets: Bool) throws(KeychainError) -> ScreenedRead
    /// `times`: the item's creation and modification times when they are carried over from
    /// elsewhere (a migration), else now. `creator`: who makes it (nil: no access control), whom
    /// the new item trusts (docs/secret-service.md, "Access control"), and who must be allowed
    /// to use an item it would replace.
    func createItem(label: String, attributes: [String: String], type: String?, secret: SecretServiceSecret,
                    replace: Bool, times: SecretServiceItemTimes?, creator: AccessCaller?) throws(KeychainError) -> (id: UUID, replaced: Bool)
    func updateItem(_ id: UUID, label: String?, attributes: [String: String]?) throws(KeychainError)
    func setSecret(_ secret: SecretServiceSecret, of id: UUID) throws(KeychainError)
    func deleteItem(_ id: UUID) throws(KeychainError)
}

/// Which items `SecretCollection.read` takes.
enum CollectionSelection {
    /// Items whose attributes include every pair (every item for none).
    case matching([String: String])
    /// These items, in this order; unknown ones are left out.
    case ids([UUID])
}

extension SecretCollection {
    /// From the collection's own calls, for one that keeps its items in memory.
    func read(_ selection: CollectionSelection, screen: (any ItemAccessScreening)?, secrets wanted: Bool) throws(KeychainError) -> ScreenedRead {
        let ids: [UUID]
        switch selection {
        case .matching(let attributes): ids = try search(attributes)
        case .ids(let asked):
            var present: [UUID] = []
            for id in asked where try contains(id) { present.append(id) }
            ids = present
        }
        let lists = try access(ids)
        let verdicts = lists.lists.indices.map { index in screen?.verdict(lists.lists[index]) { lists.item(index) } ?? .allowed }
        let allowed = zip(ids, verdicts).filter { $0.1 == .allowed }.map(\.0)
        let secrets = wanted ? try self.secrets(allowed) : [:]
        var items: [ScreenedItem] = []
        for (id, verdict) in zip(ids, verdicts) {
            items.append(ScreenedItem(id: id, verdict: verdict, secret: verdict == .allowed ? secrets[id] : nil,
                                      attributes: try item(id).attributes))
        }
        return ScreenedRead(locked: try isLocked(), items: items)
    }
}

/// The access lists of some items of a collection, in the order asked, and how an access
/// question names each (built only for an item the list does not trust).
struct CollectionAccess {
    let lists: [AccessList]
    let item: (Int) -> AccessItem
}

/// A keychain as a collection: every call goes to the engine, which owns the file.
struct KeychainCollection: SecretCollection {
    let store: KeychainStore
    let name: String

    var id: CollectionID { .keychain(name) }
    /// The label kept in the keychain file; without one, the keychain's name.
    func label() throws(KeychainError) -> String { try store.registry.keychainLabel(name) ?? name }
    func setLabel(_ label: String) throws(KeychainError) { try store.registry.setKeychainLabel(name, label) }

    func isLocked() throws(KeychainError) -> Bool { try store.locking.isLocked(name) }
    func times() throws(KeychainError) -> (created: Date, modified: Date) { try store.secretServiceTimes(of: name) }
    func itemIDs() throws(KeychainError) -> [UUID] { try store.secretServiceItemIDs(in: name) }
    func itemIDs(atMost limit: Int) throws(KeychainError) -> [UUID] { try store.freeformItems.itemIDs(in: name, atMost: limit) }
    func search(_ attributes: [String: String]) throws(KeychainError) -> [UUID] {
        try store.secretServiceSearch(attributes, in: name)
    }
    func searchWithLockState(_ attributes: [String: String]) throws(KeychainError) -> (ids: [UUID], locked: Bool) {
        try store.secretServiceMatches(attributes, in: name)
    }
    func item(_ id: UUID) throws(KeychainError) -> SecretServiceItem { try store.secretServiceItem(id, in: name) }
    func contains(_ id: UUID) throws(KeychainError) -> Bool { try store.secretServiceContains(id, in: name) }
    func secrets(_ ids: [UUID]) throws(KeychainError) -> [UUID: SecretServiceSecret] {
        try store.secretServiceSecretBatch(ids, in: name)
    }
    func access(_ ids: [UUID]) throws(KeychainError) -> CollectionAccess {
        let lists = try store.secretServiceAccessLists(ids, in: name)
        return CollectionAccess(lists: ids.map(lists.list(of:))) { index in
            AccessItem(keychain: lists.keychainPath, reference: lists.reference(of: ids[index]), label: "").trusting(lists.list(of: ids[index]))
        }
    }
    func read(_ selection: CollectionSelection, screen: (any ItemAccessScreening)?, secrets: Bool) throws(KeychainError) -> ScreenedRead {
        let engineSelection: FreeformSelection = switch selection {
        case .matching(let attributes): .matching(attributes, native: SecretServiceMapping.nativeConditions(for: attributes))
        case .ids(let ids): .ids(ids)
        }
        return try store.freeformItems.screenedRead(engineSelection, in: name, screen: screen, secrets: secrets)
    }
    /// A sandboxed app's item trusts that app alone, whatever `enforceAccess` says (it could
    /// not see its own item otherwise); anyone else's is the keychain's default for its creator,
    /// except a migrated copy's.
    func createItem(label: String, attributes: [String: String], type: String?, secret: SecretServiceSecret,
                    replace: Bool, times: SecretServiceItemTimes?, creator: AccessCaller?) throws(KeychainError) -> (id: UUID, replaced: Bool) {
        let sandboxed: AccessList? = creator.flatMap { $0.isSandboxed ? $0.identityString : nil }.map { .applications([$0]) }
        // A copy from another keyring (`keywell migrate --from-secret-service` carries its
        // times) is made as every migrated item is: open to any application.
        let trusted = times == nil ? creator?.identityString : nil
        let unidentified = times == nil && creator != nil && creator?.identityString == nil
        var replacing: (@Sendable (AccessList) -> SecretServiceReplacement)?
        if let creator { replacing = { list in SecretServiceAccess.replacement(of: list, by: creator) } }
        return try store.secretServiceCreateItem(
            in: name, label: label, attributes: attributes, type: type, secret: secret, replace: replace, times: times,
            creator: trusted, creatorUnidentified: unidentified, access: sandboxed, replacing: replacing)
    }
    func updateItem(_ id: UUID, label: String?, attributes: [String: String]?) throws(KeychainError) {
        try store.secretServiceUpdateItem(id, in: name, label: label, attributes: attributes)
    }
    func setSecret(_ secret: SecretServiceSecret, of id: UUID) throws(KeychainError) {
        try store.secretServiceSetSecret(secret, of: id, in: name)
    }
    func deleteItem(_ id: UUID) throws(KeychainError) { try store.secretServiceDeleteItem(id, in: name) }
}
