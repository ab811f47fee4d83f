import Foundation
import KeywellProtocol

/// The engine's calls grouped by capability (docs/decisions.md, "The engine's calls grouped by
/// capability"). A front end names the service it uses; the store keeps what they all share
/// (paths, open files, the event hooks, page caches). Each service is a view holding the store:
/// getting one allocates nothing and its calls are direct calls on the store's own members, which
/// stay in their `KeychainStore+*.swift` files.
extension KeychainStore {
    /// Keychain files: create, delete, list, search list, default and login keychain, labels,
    /// listing marks, backup and restore.
    public var registry: Registry { Registry(store: self) }
    /// The SecItem calls on wire dictionaries, and Always Allow.
    public var items: Items { Items(store: self) }
    /// Items by id and free-form attributes: what the Secret Service, its imports and the SSH
    /// agent's keys use.
    public var freeformItems: FreeformItems { FreeformItems(store: self) }
    /// Lock state, passwords, the second wrapping, the login-password link and the lock timers.
    /// Every password check through it runs under the store's guessing throttle (`PasswordThrottle`).
    public var locking: Locking { Locking(store: self) }
    /// Export, import and sync state.
    public var transfer: Transfer { Transfer(store: self) }

    public struct Registry: Sendable {
        let store: KeychainStore

        /// The longest keychain label, in UTF-8 bytes.
        public static let labelMaximumBytes = KeychainStore.labelMaximumBytes

        public func createKeychain(_ nameOrPath: String, password: SecretBytes, label: String? = nil) throws(KeychainError) -> String {
            try store.createKeychain(nameOrPath, password: password, label: label)
        }

        public func deleteKeychain(_ nameOrPath: String) throws(KeychainError) {
            try store.deleteKeychain(nameOrPath)
        }

        public func listKeychains() throws(KeychainError) -> [String] { try store.listKeychains() }

        public func searchList() throws(KeychainError) -> [String] { try store.searchList() }

        public func setSearchList(_ list: [String]) throws(KeychainError) { try store.setSearchList(list) }

        public func defaultKeychain() throws(KeychainError) -> String { try store.defaultKeychain() }

        public func setDefaultKeychain(_ nameOrPath: String) throws(KeychainError) { try store.setDefaultKeychain(nameOrPath) }

        public func loginKeychain() throws(KeychainError) -> String { try store.loginKeychain() }

        public func keychainExists(_ nameOrPath: String) -> Bool { store.keychainExists(nameOrPath) }

        public func keychainListingMark() -> KeychainListingMark? { store.keychainListingMark() }

        public func keychainListingIsUnchanged(since mark: KeychainListingMark?) -> Bool {
            store.keychainListingIsUnchanged(since: mark)
        }

        public func keychainFilePath(forOutputName name: String) -> String? { store.keychainFilePath(forOutputName: name) }

        public func keychainIdentity(_ nameOrPath: String) throws(KeychainError) -> UUID { try store.keychainIdentity(nameOrPath) }

        public func keychainLabel(_ nameOrPath: String) throws(KeychainError) -> String? { try store.keychainLabel(nameOrPath) }

        public func setKeychainLabel(_ nameOrPath: String, _ label: String) throws(KeychainError) {
            try store.setKeychainLabel(nameOrPath, label)
        }

        public func backupKeychain(_ nameOrPath: String, to target: String, replacing: Bool) throws(KeychainError) {
            try store.backupKeychain(nameOrPath, to: target, replacing: replacing)
        }

        public func restoreKeychain(from backup: String, as nameOrPath: String, replacing: Bool) throws(KeychainError) -> String {
            try store.restoreKeychain(from: backup, as: nameOrPath, replacing: replacing)
        }
    }

    public struct Items: Sendable {
        let store: KeychainStore

        /// The most items one `trust` call takes.
        public static let maxItemsTrustedAtOnce = KeychainStore.maxItemsTrustedAtOnce

        public func add(_ attributes: WireDictionary, creator: String? = nil, creatorUnidentified: Bool = false) throws(KeychainError) -> WireDictionary {
            try store.add(attributes, creator: creator, creatorUnidentified: creatorUnidentified)
        }

        public func addBatch(_ items: [WireDictionary]) throws(KeychainError) { try store.addBatch(items) }

        public func copyMatching(_ query: WireDictionary, screen: (any ItemAccessScreening)? = nil) throws(KeychainError) -> [WireDictionary] {
            try store.copyMatching(query, screen: screen)
        }

        /// `copyMatching` in two steps: the read and the verdicts now, the question (if one is
        /// left) and the results in `finish()`, which a caller that must not wait runs elsewhere.
        public func screenedSearch(_ query: WireDictionary, screen: any ItemAccessScreening) throws(KeychainError) -> ScreenedSearch {
            try store.screenedSearch(query, screen: screen)
        }

        public func update(
            _ query: WireDictionary, _ attributesToUpdate: WireDictionary, screen: (any ItemAccessScreening)? = nil
        ) throws(KeychainError) {
            try store.update(query, attributesToUpdate, screen: screen)
        }

        public func delete(_ query: WireDictionary, screen: (any ItemAccessScreening)? = nil) throws(KeychainError) {
            try store.delete(query, screen: screen)
        }

        public func trust(_ identity: String, items references: [[UInt8]]) throws(KeychainError) {
            try store.trust(identity, items: references)
        }

        public func stillTrusts(_ identity: String, reference: [UInt8]) -> Bool {
            store.stillTrusts(identity, reference: reference)
        }
    }

    public struct FreeformItems: Sendable {
        let store: KeychainStore

        public func keychainDates(of keychain: String) throws(KeychainError) -> (created: Date, modified: Date) {
            try store.keychainDates(of: keychain)
        }

        public func itemIDs(in keychain: String) throws(KeychainError) -> [UUID] { try store.itemIDs(in: keychain) }

        public func itemIDs(in keychain: String, atMost limit: Int) throws(KeychainError) -> [UUID] {
            try store.itemIDs(in: keychain, atMost: limit)
        }

        public func containsItem(_ id: UUID, in keychain: String) throws(KeychainError) -> Bool {
            try store.containsItem(id, in: keychain)
        }

        public func accessLists(_ ids: [UUID], in keychain: String) throws(KeychainError) -> ItemAccessLists {
            try store.accessLists(ids, in: keychain)
        }

        public func screened(
            _ ids: [UUID], in keychain: String, by screen: any ItemAccessScreening,
            label: (UUID) throws(KeychainError) -> String
        ) throws(KeychainError) -> [UUID] {
            try store.screened(ids, in: keychain, by: screen, label: label)
        }

        public func freeformMatches(
            _ attributes: [String: String], native: NativeConditions, in keychain: String
        ) throws(KeychainError) -> (ids: [UUID], locked: Bool) {
            try store.freeformMatches(attributes, native: native, in: keychain)
        }

        public func itemSummary(_ id: UUID, in keychain: String) throws(KeychainError) -> ItemSummary {
            try store.itemSummary(id, in: keychain)
        }

        public func secrets(of ids: [UUID], in keychain: String) throws(KeychainError) -> [UUID: ItemSecret] {
            try store.secrets(of: ids, in: keychain)
        }

        public func secretBatch(of ids: [UUID], in keychain: String) throws(KeychainError) -> [UUID: ItemSecret] {
            try store.secretBatch(of: ids, in: keychain)
        }

        public func screenedRead(
            _ selection: FreeformSelection, in keychain: String, screen: (any ItemAccessScreening)?, secrets: Bool
        ) throws(KeychainError) -> ScreenedRead {
            try store.screenedRead(selection, in: keychain, screen: screen, secrets: secrets)
        }

        // swiftlint:disable:next function_parameter_count
        public func addFreeformItem(
            in keychain: String, itemClass: ItemClass = .genericPassword, label: String, attributes: [String: String],
            type: String?, secret: ItemSecret, replace: Bool, times: ItemDates? = nil, creator: String? = nil,
            creatorUnidentified: Bool = false, access: AccessList? = nil,
            replacing: (@Sendable (AccessList) -> ItemReplacement)? = nil, derive: DeriveNative
        ) throws(KeychainError) -> (id: UUID, replaced: Bool) {
            try store.addFreeformItem(
                in: keychain, itemClass: itemClass, label: label, attributes: attributes, type: type, secret: secret,
                replace: replace, times: times, creator: creator, creatorUnidentified: creatorUnidentified,
                access: access, replacing: replacing, derive: derive)
        }

        public func updateFreeformItem(
            _ id: UUID, in keychain: String, label: String?, attributes: [String: String]?, derive: DeriveNative
        ) throws(KeychainError) {
            try store.updateFreeformItem(id, in: keychain, label: label, attributes: attributes, derive: derive)
        }

        public func setSecret(_ secret: ItemSecret, of id: UUID, in keychain: String) throws(KeychainError) {
            try store.setSecret(secret, of: id, in: keychain)
        }

        public func deleteItem(_ id: UUID, in keychain: String) throws(KeychainError) {
            try store.deleteItem(id, in: keychain)
        }

        public func importFreeformItems(
            _ items: [FreeformImportItem], in keychain: String, derive: DeriveNative
        ) throws(KeychainError) -> [UUID] {
            try store.importFreeformItems(items, in: keychain, derive: derive)
        }
    }

    public struct Locking: Sendable {
        let store: KeychainStore

        /// Unlocks with a password, under the guessing throttle: refused at once inside a delay,
        /// a wrong password counted.
        public func unlock(_ nameOrPath: String, password: SecretBytes) throws(KeychainError) {
            try store.passwordThrottle.unlock(nameOrPath, password: password, in: store)
        }

        /// Unlocks with a password this daemon set or checked a moment ago, outside the throttle:
        /// it is no guess, so it neither counts nor waits out a delay a guesser started meanwhile.
        /// Only for the login keychain's re-wrap to the login password (`LoginPasswordQuestion`),
        /// which unlocks with the password it has just set.
        public func unlockWithProvenPassword(_ nameOrPath: String, password: SecretBytes) throws(KeychainError) {
            try store.unlock(nameOrPath, password: password)
        }

        public func unlock(_ nameOrPath: String, wrapping: SecondWrapping, key: SecretBytes) throws(KeychainError) {
            try store.unlock(nameOrPath, wrapping: wrapping, key: key)
        }

        public func secondWrapping(_ nameOrPath: String, under key: SecretBytes) throws(KeychainError) -> SecondWrapping {
            try store.secondWrapping(nameOrPath, under: key)
        }

        public func lock(_ nameOrPath: String) throws(KeychainError) { try store.lock(nameOrPath) }

        public func lockAll() { store.lockAll() }

        public func dropSessionSecrets() { store.dropSessionSecrets() }

        public func isLocked(_ nameOrPath: String) throws(KeychainError) -> Bool { try store.isLocked(nameOrPath) }

        public func info(_ nameOrPath: String) throws(KeychainError) -> WireDictionary { try store.info(nameOrPath) }

        public func setSettings(_ nameOrPath: String, _ settings: WireDictionary) throws(KeychainError) {
            try store.setSettings(nameOrPath, settings)
        }

        /// Changes the password under the guessing throttle (the old password is the one checked).
        public func changePassword(_ nameOrPath: String, old: SecretBytes, new: SecretBytes, byLogin: Bool = false) throws(KeychainError) {
            try store.passwordThrottle.changePassword(nameOrPath, old: old, new: new, byLogin: byLogin, in: store)
        }

        /// Changes the password when `old` has just opened the keychain through the throttle,
        /// outside it: no guess, so it neither counts nor waits out a delay a guesser started
        /// meanwhile. Only for `LoginSessions`' re-wrap of a drifted login keychain to the login
        /// password, right after an unlock proved `old`.
        public func changePasswordWithProvenPassword(
            _ nameOrPath: String, old: SecretBytes, new: SecretBytes, byLogin: Bool
        ) throws(KeychainError) {
            try store.changePassword(nameOrPath, old: old, new: new, byLogin: byLogin)
        }

        public func loginPasswordLink(_ nameOrPath: String) throws(KeychainError) -> LoginPasswordLink {
            try store.loginPasswordLink(nameOrPath)
        }

        public func setLoginPasswordLink(_ nameOrPath: String, _ link: LoginPasswordLink) throws(KeychainError) {
            try store.setLoginPasswordLink(nameOrPath, link)
        }

        public func isFirstStoreKeychain(_ nameOrPath: String) throws(KeychainError) -> Bool {
            try store.isFirstStoreKeychain(nameOrPath)
        }

        public func markFirstStoreKeychain(_ nameOrPath: String) throws(KeychainError) {
            try store.markFirstStoreKeychain(nameOrPath)
        }

        public func lockIdleKeychains(now: Date = Date()) -> [String] { store.lockIdleKeychains(now: now) }

        public func lockForSleep() -> [String] { store.lockForSleep() }

        public func lockForScreenLock() -> [String] { store.lockForScreenLock() }

        public func nextIdleDeadline() -> Date? { store.nextIdleDeadline() }
    }

    public struct Transfer: Sendable {
        let store: KeychainStore

        public func exportKeychains(
            _ keychains: [String], to fd: Int32, passphrase: SecretBytes, screen: (any ItemAccessScreening)? = nil
        ) throws(KeychainError) -> (items: Int, thisDeviceOnly: Int) {
            try store.exportKeychains(keychains, to: fd, passphrase: passphrase, screen: screen)
        }

        public func inspectExport(from fd: Int32, passphrase: SecretBytes) throws(KeychainError) -> (keychains: [String], itemCount: Int) {
            try store.inspectExport(from: fd, passphrase: passphrase)
        }

        public func importExport(
            from fd: Int32, passphrase: SecretBytes, into keychain: String?, policy: ImportPolicy
        ) throws(KeychainError) -> ImportSummary {
            try store.importExport(from: fd, passphrase: passphrase, into: keychain, policy: policy)
        }

        public func portableItemIDs(in keychain: String) throws(KeychainError) -> (ids: [UUID], thisDeviceOnly: Int) {
            try store.portableItemIDs(in: keychain)
        }

        public func syncSettings(_ keychain: String) throws(KeychainError) -> [String: Data] { try store.syncSettings(keychain) }

        public func syncStates(_ keychain: String) throws(KeychainError) -> [Data: SyncItemState] { try store.syncStates(keychain) }

        public func syncCandidates(_ keychain: String) throws(KeychainError) -> [SyncLocalItem] { try store.syncCandidates(keychain) }

        public func syncItems(_ keychain: String, uuids: [UUID]) throws(KeychainError) -> [(item: SyncItem, fingerprint: Data)] {
            try store.syncItems(keychain, uuids: uuids)
        }

        @discardableResult
        public func applySync(_ keychain: String, _ application: SyncApplication) throws(KeychainError) -> Int {
            try store.applySync(keychain, application)
        }

        public func clearSyncState(_ keychain: String) throws(KeychainError) { try store.clearSyncState(keychain) }

        public func sealForSync(_ keychain: String, _ bytes: SecretBytes) throws(KeychainError) -> Data {
            try store.sealForSync(keychain, bytes)
        }

        public func openForSync(_ keychain: String, _ sealed: Data) throws(KeychainError) -> SecretBytes {
            try store.openForSync(keychain, sealed)
        }

        public func syncConflicts(_ keychain: String) throws(KeychainError) -> [SyncConflictEntry] { try store.syncConflicts(keychain) }

        public func syncConflictSecret(_ keychain: String, id: Int64) throws(KeychainError) -> Data {
            try store.syncConflictSecret(keychain, id: id)
        }
    }
}
