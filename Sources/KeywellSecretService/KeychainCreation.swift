import Foundation
import KeywellCore
import KeywellProtocol

/// Making a keychain for a Secret Service client (CreateCollection's prompt and gnome-keyring's
/// CreateWithMasterPassword): the keychain with the collection's label, in the search list (so the
/// native API and the CLI see its items) and, for the alias `default`, the default. The engine
/// reports the new keychain, which sends CollectionCreated.
struct KeychainCreation {
    let context: ServiceContext

    func make(name: String, label: String, alias: String, password: SecretBytes) throws(KeychainError) -> CollectionID {
        // A first store before any login made it: the login that later creates `login` makes
        // that the default instead (docs/secret-service.md, "First store").
        let firstStore = alias == "default" && name != KeywellNames.loginKeychain
            && !context.store.registry.keychainExists(KeywellNames.loginKeychain)
        _ = try context.store.registry.createKeychain(name, password: password, label: label.isEmpty ? nil : label)
        if firstStore { try context.store.locking.markFirstStoreKeychain(name) }
        context.keychainUnlocked(name, password)
        // The default first: a search list the user never set follows the default, so the
        // new default is in it without turning it into a list of their own.
        if alias == "default" { try context.store.registry.setDefaultKeychain(name) }
        let list = try context.store.registry.searchList()
        if !list.contains(name) { try context.store.registry.setSearchList(list + [name]) }
        context.logger.info("created keychain \"\(name)\" through the Secret Service")
        return .keychain(name)
    }
}
