import KeywellNativeClient
import KeywellSystem

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `security`'s item search: the keychains named on the command line in order, else the search
/// list; keychains that do not exist are skipped; the first match wins, even in a locked
/// keychain (whose secret then cannot be read: exit 36, as on macOS, unless a person at a
/// terminal types its password: `CommandContext.unlockOnTerminal`).
///
/// The daemon's CopyMatching does not say which keychain an item came from, and the block
/// prints it, so the search asks one keychain at a time (`u_Keychain`).
struct ItemSearch {
    struct Failure: Error {
        let status: OSStatus
        /// The keychain the failure concerns, when it is one keychain (for hints).
        let keychain: String?
        /// Keychains of the scope that do not exist (skipped, as `security` does; for hints).
        var missing: [String] = []
        /// The daemon's explanation (for hints).
        var detail: String?
    }

    let context: CommandContext

    /// Daemon names of the keychains to search.
    func scope(_ operands: [String]) throws(KeychainError) -> [String] {
        if !operands.isEmpty { return operands.map(context.naming.daemonName) }
        return try context.client.searchList()
    }

    func query(_ itemClass: ItemClass, _ filters: WireDictionary, in keychain: String,
               attributes: Bool = true, secret: Bool = false, all: Bool = false, access: Bool = false) -> WireDictionary {
        var query = filters
        query[WireKey.class] = .string(itemClass.rawValue)
        query[WireKey.useKeychain] = .string(keychain)
        if attributes {
            query[WireKey.returnAttributes] = .bool(true)
            query[WireKey.returnPersistentRef] = .bool(true)
        }
        if secret { query[WireKey.returnData] = .bool(true) }
        if access { query[WireKey.returnAccess] = .bool(true) }
        if all { query[WireKey.matchLimit] = .string(WireKey.matchLimitAll) }
        return query
    }

    /// The first match in the search list, in ONE request: the daemon walks the list itself and
    /// names the keychain it found the item in (`r_Keychain`), instead of GetSearchList and then
    /// one CopyMatching per keychain (docs/cli.md "Password commands"). A search for a
    /// secret takes it from the first unlocked keychain holding a match. Any answer but a match
    /// or "not found" (only locked keychains match; a daemon older than `r_Keychain`) falls back
    /// to `first(scope:)`, which names the keychain in hints and at a terminal asks for a
    /// locked keychain's password.
    func firstInSearchList(_ itemClass: ItemClass, _ filters: WireDictionary, secret: Bool) throws(Failure) -> FoundItem {
        var query = query(itemClass, filters, in: "", secret: secret)
        query[WireKey.useKeychain] = nil
        query[WireKey.returnKeychain] = .bool(true)
        do {
            var results = try context.client.copyMatching(query)
            // Taken out of the array, so the secret's buffer has one owner and can be wiped.
            if !results.isEmpty {
                var result = results.removeFirst()
                results.removeAll()
                if let keychain = result.removeValue(forKey: WireKey.useKeychain)?.stringValue {
                    return FoundItem(itemClass: itemClass, keychain: keychain, result: &result, secret: secret)
                }
                FoundItem(itemClass: itemClass, keychain: "", result: &result, secret: secret).secret?.wipe()
            }
        } catch where error.status == SecStatus.itemNotFound {
            throw Failure(status: error.status, keychain: nil)
        } catch {}
        let scope: [String]
        do { scope = try context.client.searchList() } catch { throw Failure(status: error.status, keychain: nil) }
        return try first(itemClass, filters, scope: scope, secret: secret)
    }

    /// The first match in `scope`, with its secret when `secret` is set.
    func first(_ itemClass: ItemClass, _ filters: WireDictionary, scope: [String], secret: Bool) throws(Failure) -> FoundItem {
        var missing: [String] = []
        var asked: Set<String> = []
        var remaining = scope[...]
        while let keychain = remaining.first {
            do {
                var results = try context.client.copyMatching(query(itemClass, filters, in: keychain, secret: secret))
                guard !results.isEmpty else {
                    remaining.removeFirst()
                    continue
                }
                // Taken out of the array, so the secret's buffer has one owner and can be wiped.
                var result = results.removeFirst()
                results.removeAll()
                return FoundItem(itemClass: itemClass, keychain: keychain, result: &result, secret: secret)
            } catch {
                switch error.status {
                case SecStatus.itemNotFound:
                    remaining.removeFirst()
                    continue
                case SecStatus.noSuchKeychain:
                    missing.append(keychain)
                    remaining.removeFirst()
                    continue
                case SecStatus.interactionNotAllowed:
                    // At a terminal: ask for its password once, then look in it again.
                    if asked.insert(keychain).inserted, context.unlockOnTerminal(keychain) { continue }
                    throw Failure(status: error.status, keychain: context.naming.displayName(for: keychain))
                default:
                    throw Failure(status: error.status, keychain: nil, detail: error.detail)
                }
            }
        }
        throw Failure(status: SecStatus.itemNotFound, keychain: nil, missing: missing)
    }

    /// The secret of one item, by its persistent reference.
    func secret(of item: FoundItem) throws(KeychainError) -> SecretBytes {
        guard let ref = item.persistentRef else { throw KeychainError(SecStatus.invalidItemRef) }
        var results = try context.client.copyMatching([
            WireKey.valuePersistentRef: .data(ref),
            WireKey.returnData: .bool(true),
        ])
        guard !results.isEmpty else { return SecretBytes(count: 0) }
        var result = results.removeFirst()
        guard var data = result.removeValue(forKey: WireKey.valueData)?.dataValue else { return SecretBytes(count: 0) }
        return SecretBytes(wiping: &data)
    }
}
