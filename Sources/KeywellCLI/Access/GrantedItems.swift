import KeywellNativeClient
import KeywellProtocol

/// The items `keywell access` acts on: those matching `-s` (service, or server for internet
/// passwords), `-a` and `-l` in the keychains given with `-k` (default: the search list), each
/// with its access list. Asking for attributes and lists never asks a question
/// (docs/access-control.md, "Who is asked").
struct GrantedItems {
    struct Selectors {
        var service: String?
        var account: String?
        var label: String?
        var keychains: [String] = []

        var isEmpty: Bool { service == nil && account == nil && label == nil }

        func filters(for itemClass: ItemClass) -> WireDictionary {
            var filters: WireDictionary = [:]
            if let service {
                filters[itemClass == .genericPassword ? AttributeKey.service : AttributeKey.server] = .string(service)
            }
            if let account { filters[AttributeKey.account] = .string(account) }
            if let label { filters[AttributeKey.label] = .string(label) }
            return filters
        }
    }

    let search: ItemSearch

    /// Every match, keychain by keychain in scope order, generic passwords first. A keychain
    /// named with `-k` that does not exist is an error; one of the search list is skipped, as
    /// `dump-keychain` skips it.
    func matching(_ selectors: Selectors) throws(KeychainError) -> [FoundItem] {
        let explicit = !selectors.keychains.isEmpty
        let scope = try search.scope(selectors.keychains)
        var found: [FoundItem] = []
        for keychain in scope {
            for itemClass in [ItemClass.genericPassword, .internetPassword] {
                let query = search.query(itemClass, selectors.filters(for: itemClass), in: keychain, all: true, access: true)
                do {
                    found += try search.context.client.copyMatching(query).map {
                        FoundItem(itemClass: itemClass, keychain: keychain, result: $0, secret: nil)
                    }
                } catch {
                    switch error.status {
                    case SecStatus.itemNotFound: continue
                    case SecStatus.noSuchKeychain where !explicit: break
                    default: throw error
                    }
                    break
                }
            }
        }
        return found
    }

    /// Gives `item` the list `access`: the native `Update` with `acls` (docs/access-control.md,
    /// "Native API and KeychainServices"). A program the item does not trust is asked first.
    func setAccess(_ access: AccessList, of item: FoundItem) throws(KeychainError) {
        guard let ref = item.persistentRef else { throw KeychainError(SecStatus.invalidItemRef) }
        try search.context.client.update([WireKey.valuePersistentRef: .data(ref)],
                                         attributes: [WireKey.access: access.wireValue])
    }
}
