import Foundation
import GRDB
import KeywellProtocol

/// The access lists of some items of one keychain, as a face reads them (the Secret Service's) to
/// decide, per caller, whether an item is usable, locked for that caller, or (for a sandboxed
/// caller it does not name) absent (docs/secret-service.md, "Access control").
public struct ItemAccessLists: Sendable {
    /// The keychain file's path: what an access question names the keychain by.
    public let keychainPath: String
    private let keychainUUID: UUID
    /// Only the items that name applications: any other trusts any application.
    private let named: [UUID: AccessList]

    init(keychainPath: String, keychainUUID: UUID, named: [UUID: AccessList]) {
        self.keychainPath = keychainPath
        self.keychainUUID = keychainUUID
        self.named = named
    }

    /// An item's list (any application for an item that names none, or is not in the keychain).
    public func list(of item: UUID) -> AccessList { named[item] ?? .anyApplication }

    /// The item's `v_PersistentRef` bytes: how access questions and Always Allow name it.
    public func reference(of item: UUID) -> [UInt8] { Array(PersistentRef(keychain: keychainUUID, item: item).data) }
}

/// What `addFreeformItem` does with an item it would replace, decided from that item's
/// access list by the face that knows the caller.
public enum ItemReplacement: Sendable {
    /// Replace it (the caller may use it).
    case replace
    /// Leave it alone and make a new item (the caller does not see it: a sandboxed app must not
    /// overwrite, or learn of, another app's item).
    case makeNew
    /// Refuse: `errSecInteractionNotAllowed` (the item is locked for the caller).
    case refuse
}

extension KeychainStore {
    /// The access lists of those of `ids` that are in the keychain. Works while locked.
    ///
    /// Not checked against the items' MACs: the lists only decide what a caller is shown. Every
    /// read that returns a secret checks the MAC, which covers the list, in the statement that
    /// reads the secret, so a list edited on disk yields `errSecDecode`, never a secret. One
    /// statement per 64 items.
    func accessLists(_ ids: [UUID], in keychain: String) throws(KeychainError) -> ItemAccessLists {
        let file = try file(at: location(keychain))
        let named = try ids.isEmpty ? [:] : file.database.read { db -> [UUID: AccessList] in
            guard try ItemAccessColumn.hasColumn(db) else { return [:] }
            var result: [UUID: AccessList] = [:]
            var decoder = ItemAccessColumn.Decoder()
            try ChunkedLookup.forEachRow(of: ids.map(\.data.databaseValue), db,
                                           selectIn: "SELECT id, uuid, access FROM item WHERE access IS NOT NULL AND uuid IN") { rows in
                guard let uuid = rows.uuid(1) else { return }
                if let list = try decoder.list(rows, column: 2, rowID: rows.integer(0)) { result[uuid] = list }
            }
            return result
        }
        return ItemAccessLists(keychainPath: file.location.path, keychainUUID: file.uuid, named: named)
    }
}

extension KeychainStore {
    /// Those of `ids` (items of `keychain`) that `screen` lets the caller have, in order, after
    /// one question about the ones it does not trust; hidden ones are left out. For a face that
    /// hands items out by id (the gnome-keyring export): `label` names an item in the question
    /// the way that face shows it.
    func screened(
        _ ids: [UUID], in keychain: String, by screen: any ItemAccessScreening, label: (UUID) throws(KeychainError) -> String
    ) throws(KeychainError) -> [UUID] {
        let lists = try accessLists(ids, in: keychain)
        var round = AccessScreeningRound<(id: UUID, item: AccessItem)>(screen)
        let kept = round.admitted(ids, list: lists.list(of:),
                                  item: { AccessItem(keychain: lists.keychainPath, reference: lists.reference(of: $0), label: "") },
                                  pending: { ($0, $1) })
        try round.askOnce { entries throws(KeychainError) in
            try entries.map { entry throws(KeychainError) in
                entry.item.labelled(try label(entry.id))
            }
        }
        return kept
    }
}
