import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol

/// The entries of one open wallet (a keychain) as one caller sees them: items of schema
/// `org.qt.keychain`, found by their `server` (folder) and `user` (key) attributes. Access
/// lists apply as on every face: an item the caller's list does not name is asked about (the
/// access question) before its secret is read or it is changed; a sandboxed caller does not see
/// items it is not named in (docs/kwallet.md, "Access control").
struct KWalletFolder {
    let collection: any SecretCollection
    let access: CallerAccess

    private var schema: [String: String] { [SecretServiceMapping.schemaAttribute: KWalletProtocol.schema] }

    /// Every entry item the caller may see, with its attributes, oldest first.
    func items(in folder: String? = nil) throws(KeychainError) -> [SecretServiceItem] {
        var query = schema
        if let folder { query[KWalletProtocol.folderAttribute] = folder }
        let ids = try access.visible(collection.search(query), in: collection)
        var items: [SecretServiceItem] = []
        for id in ids { items.append(try collection.item(id)) }
        return items
    }

    func folders() throws(KeychainError) -> Set<String> {
        Set(try items().compactMap { $0.attributes[KWalletProtocol.folderAttribute] })
    }

    func item(folder: String, key: String) throws(KeychainError) -> SecretServiceItem? {
        var query = schema
        query[KWalletProtocol.folderAttribute] = folder
        query[KWalletProtocol.keyAttribute] = key
        guard let id = try access.visible(collection.search(query), in: collection).first else { return nil }
        return try collection.item(id)
    }

    /// One entry, for `readEntry`, `readMap` and `readPassword` (the hot path of every KDE
    /// program): the match, its list, its type and its secret in one read
    /// (docs/performance.md, "One read per call"). Nil when there is none, or it does not read as its type.
    /// An entry whose list does not trust the caller is left for the question: what is left to
    /// do (ask, then open its secret) comes back to run where waiting is allowed.
    func entry(folder: String, key: String) throws(KeychainError) -> DBusAnswer<KWalletEntry?, KeychainError> {
        let query = [SecretServiceMapping.schemaAttribute: KWalletProtocol.schema,
                     KWalletProtocol.folderAttribute: folder, KWalletProtocol.keyAttribute: key]
        let read = try collection.read(.matching(query), screen: access.screen, secrets: true)
        defer { read.items.forEach { $0.secret.map { SecretWipe.wipe($0.value) } } }
        guard let found = read.items.first(where: { $0.verdict != .hidden }) else { return .answered(nil) }
        let type = found.freeformValue(KWalletProtocol.typeAttribute)
        if found.verdict == .mustAsk {
            let id = found.id
            return .afterQuestion(DBusQuestion { () throws(KeychainError) -> KWalletEntry? in
                guard try ask([id]) else { throw Self.denied }
                // Asked and allowed: the secret was not opened for a caller the list did not trust.
                guard let secret = try collection.secrets([id])[id] else { return nil }
                defer { SecretWipe.wipe(secret.value) }
                return KWalletEntry(kind: .init(typeAttribute: type), typeAttribute: type, secret: secret.value)
            })
        }
        if read.locked { throw KeychainError(SecStatus.interactionNotAllowed, detail: "the wallet is locked") }
        guard let secret = found.secret else { return .answered(nil) }
        return .answered(KWalletEntry(kind: .init(typeAttribute: type), typeAttribute: type, secret: secret.value))
    }

    /// The entries of `items` the caller may read: one access question for those whose lists do
    /// not trust it (denied ones are left out); entries whose secret does not read as their type
    /// are left out too.
    func entries(_ items: [SecretServiceItem]) throws(KeychainError) -> [(item: SecretServiceItem, entry: KWalletEntry)] {
        let allowed = try allowed(items.map(\.id))
        let secrets = try collection.secrets(allowed)
        defer { secrets.values.forEach { SecretWipe.wipe($0.value) } }
        return items.compactMap { item in
            guard let secret = secrets[item.id] else { return nil }
            let type = item.attributes[KWalletProtocol.typeAttribute]
            return KWalletEntry(kind: .init(typeAttribute: type), typeAttribute: type, secret: secret.value).map { (item, $0) }
        }
    }

    /// `ids` the caller may use: asks the person about those whose lists do not trust it. It
    /// may wait for the answer: only calls placed on a worker use it (the lists and writes).
    func allowed(_ ids: [UUID]) throws(KeychainError) -> [UUID] {
        let verdicts = try access.verdicts(ids, in: collection)
        let asked = zip(ids, verdicts).filter { $0.1 == .mustAsk }.map(\.0)
        var allowed = zip(ids, verdicts).filter { $0.1 == .allowed }.map(\.0)
        if !asked.isEmpty, try ask(asked) { allowed += asked }
        return allowed
    }

    /// One question about `ids`, whose lists do not trust the caller (it waits for the
    /// answer); true when the person allows. Without access control nothing is asked.
    private func ask(_ ids: [UUID]) throws(KeychainError) -> Bool {
        guard let gate = access.access?.gate, let caller = access.caller else { return true }
        let lists = try collection.access(ids)
        return gate.ask(caller, about: ids.indices.map { lists.item($0) }, interactive: true).allows
    }

    /// Writes the entry: the item of `folder`/`key` gets the new type and secret (keeping its
    /// access list), or a new item trusting the writer is made.
    func write(_ entry: KWalletEntry, folder: String, key: String) throws(KeychainError) {
        let attributes = KWalletEntry.attributes(folder: folder, key: key, kind: entry.kind)
        let label = KWalletEntry.label(folder: folder, key: key)
        let secret = ItemSecret(value: entry.secret, contentType: FreeformItem.defaultContentType)
        defer { SecretWipe.wipe(secret.value) }
        if let existing = try item(folder: folder, key: key) {
            guard try allowed([existing.id]) == [existing.id] else { throw Self.denied }
            if existing.attributes != attributes || existing.label != label {
                try collection.updateItem(existing.id, label: label, attributes: attributes)
            }
            try collection.setSecret(secret, of: existing.id)
        } else {
            _ = try collection.createItem(label: label, attributes: attributes, type: nil, secret: secret,
                                          replace: false, times: nil, creator: access.caller)
        }
    }

    /// Whether an entry was removed.
    func remove(folder: String, key: String) throws(KeychainError) -> Bool {
        guard let existing = try item(folder: folder, key: key) else { return false }
        guard try allowed([existing.id]) == [existing.id] else { throw Self.denied }
        try collection.deleteItem(existing.id)
        return true
    }

    /// kwalletd's answer: 0 renamed, −1 when `old` is missing or `new` exists.
    func rename(folder: String, from old: String, to new: String) throws(KeychainError) -> Int32 {
        guard old != new, let existing = try item(folder: folder, key: old), try item(folder: folder, key: new) == nil else { return -1 }
        guard try allowed([existing.id]) == [existing.id] else { throw Self.denied }
        let kind = KWalletEntry.Kind(typeAttribute: existing.attributes[KWalletProtocol.typeAttribute])
        var attributes = existing.attributes
        attributes[KWalletProtocol.keyAttribute] = new
        attributes[KWalletProtocol.typeAttribute] = attributes[KWalletProtocol.typeAttribute] ?? kind.typeAttribute
        try collection.updateItem(existing.id, label: KWalletEntry.label(folder: folder, key: new), attributes: attributes)
        return 0
    }

    /// Removes every entry of `folder` the caller may change.
    func removeFolder(_ folder: String) throws(KeychainError) {
        let ids = try allowed(items(in: folder).map(\.id))
        for id in ids { try collection.deleteItem(id) }
    }

    static let denied = KeychainError(SecStatus.authFailed, detail: "the person did not allow this application to use the entry")
}
