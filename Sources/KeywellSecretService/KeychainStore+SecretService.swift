import Foundation
import KeywellCore
import KeywellProtocol

/// The Secret Service's calls on the engine: its collections are keychains and its items are
/// keychain items, made from free-form attributes when the Secret Service makes them
/// (docs/secret-service.md, "Where the mapping lives"). `SecretServiceMapping` says how its
/// attributes derive and read native ones; the engine does the rest in its own words.
///
/// Locked keychains answer searches and attribute reads; secrets and changes need them unlocked
/// (`errSecInteractionNotAllowed`). Unknown items are `errSecItemNotFound`. While unlocked, every
/// item a search, property read or secret read returns is checked against its integrity MAC
/// first: a tampered one fails the call with `errSecDecode`.
extension KeychainStore {
    // MARK: Collections

    /// A collection's `Created` and `Modified` (`keychainDates`).
    public func secretServiceTimes(of keychain: String) throws(KeychainError) -> (created: Date, modified: Date) {
        try freeformItems.keychainDates(of: keychain)
    }

    /// Every item of the collection, oldest first.
    public func secretServiceItemIDs(in keychain: String) throws(KeychainError) -> [UUID] {
        try freeformItems.itemIDs(in: keychain)
    }

    /// Whether the collection has this item.
    public func secretServiceContains(_ id: UUID, in keychain: String) throws(KeychainError) -> Bool {
        try freeformItems.containsItem(id, in: keychain)
    }

    // MARK: Reading

    /// Items whose Secret Service attributes include every pair of `attributes` (exact match);
    /// all items for an empty query. Works while locked.
    public func secretServiceSearch(_ attributes: [String: String], in keychain: String) throws(KeychainError) -> [UUID] {
        try secretServiceMatches(attributes, in: keychain).ids
    }

    /// `secretServiceSearch` and whether the keychain is locked, from one look-up of its file
    /// (SearchItems needs both). Native items match through the attributes derived from their own.
    public func secretServiceMatches(_ attributes: [String: String], in keychain: String) throws(KeychainError) -> (ids: [UUID], locked: Bool) {
        try freeformItems.freeformMatches(attributes, native: SecretServiceMapping.nativeConditions(for: attributes), in: keychain)
    }

    /// One item's attributes, label, type and dates. Works while locked (unchecked); unlocked,
    /// checked against the item's MAC.
    public func secretServiceItem(_ id: UUID, in keychain: String) throws(KeychainError) -> SecretServiceItem {
        SecretServiceItem(try freeformItems.itemSummary(id, in: keychain))
    }

    /// The secrets of many items at once; unknown items are left out.
    public func secretServiceSecrets(_ ids: [UUID], in keychain: String) throws(KeychainError) -> [UUID: SecretServiceSecret] {
        try freeformItems.secrets(of: ids, in: keychain)
    }

    /// As `secretServiceSecrets`, reading per item only what opening its secret takes (`GetSecrets`).
    public func secretServiceSecretBatch(_ ids: [UUID], in keychain: String) throws(KeychainError) -> [UUID: SecretServiceSecret] {
        try freeformItems.secretBatch(of: ids, in: keychain)
    }

    // MARK: Writing

    /// Makes an item (one durable commit). With `replace`, an item made through the Secret Service
    /// with exactly the same attributes gets the new label, secret and type instead, keeping its
    /// identity. `times` carries an item's creation and modification times over from elsewhere
    /// (a migration); without it both are now. Returns the item and whether it replaced one.
    /// `creator`: as in `add` (a new item's access list); nil, as a migration passes, makes an
    /// item any application may use. A replaced item keeps its list.
    /// `creatorUnidentified`, `access`, `replacing`: as in `addFreeformItem` (who the new item
    /// trusts, and whether this caller may replace an item it would replace).
    public func secretServiceCreateItem(
        in keychain: String, label: String, attributes: [String: String], type: String?,
        secret: SecretServiceSecret, replace: Bool, times: SecretServiceItemTimes? = nil, creator: String? = nil,
        creatorUnidentified: Bool = false, access: AccessList? = nil,
        replacing: (@Sendable (AccessList) -> SecretServiceReplacement)? = nil
    ) throws(KeychainError) -> (id: UUID, replaced: Bool) {
        // Kept only when it says more than the schema attribute.
        let type = type == attributes[SecretServiceMapping.schemaAttribute] ? nil : type
        return try freeformItems.addFreeformItem(
            in: keychain, label: label, attributes: attributes, type: type, secret: secret, replace: replace,
            times: times, creator: creator, creatorUnidentified: creatorUnidentified, access: access,
            replacing: replacing, derive: SecretServiceMapping.derivedNativeAttributes)
    }

    /// A migration's items of one source file in one transaction, all or none (docs/migration.md,
    /// "The state file and importing again"); types as `secretServiceCreateItem` keeps them.
    public func secretServiceImportItems(_ items: [FreeformImportItem], in keychain: String) throws(KeychainError) -> [UUID] {
        let normalized = items.map { item in
            FreeformImportItem(label: item.label, attributes: item.attributes,
                               type: item.type == item.attributes[SecretServiceMapping.schemaAttribute] ? nil : item.type,
                               secret: item.secret, times: item.times, replacing: item.replacing)
        }
        return try freeformItems.importFreeformItems(normalized, in: keychain, derive: SecretServiceMapping.derivedNativeAttributes)
    }

    /// The access lists of the collection's items `ids` (works while locked).
    public func secretServiceAccessLists(_ ids: [UUID], in keychain: String) throws(KeychainError) -> SecretServiceAccessLists {
        try freeformItems.accessLists(ids, in: keychain)
    }

    /// Changes the label and/or the attributes. Attributes of native items are derived from their
    /// native ones and change through the native API (`errSecReadOnlyAttr` here).
    public func secretServiceUpdateItem(
        _ id: UUID, in keychain: String, label: String?, attributes: [String: String]?
    ) throws(KeychainError) {
        try freeformItems.updateFreeformItem(id, in: keychain, label: label, attributes: attributes,
                               derive: SecretServiceMapping.derivedNativeAttributes)
    }

    public func secretServiceSetSecret(_ secret: SecretServiceSecret, of id: UUID, in keychain: String) throws(KeychainError) {
        try freeformItems.setSecret(secret, of: id, in: keychain)
    }

    public func secretServiceDeleteItem(_ id: UUID, in keychain: String) throws(KeychainError) {
        try freeformItems.deleteItem(id, in: keychain)
    }
}
