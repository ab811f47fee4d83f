import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol

/// `/org/freedesktop/secrets/collection/<c>` and the alias paths that stand for one:
/// `org.freedesktop.Secret.Collection`.
struct CollectionObject: CollectionMethods {
    let context: ServiceContext
    let address: CollectionAddress

    func delete(call: CallContext) throws(DBusError) -> String {
        try delete(context.collection(address, caller: call.sender))
        return SecretServiceNames.noObject
    }

    func searchItems(attributes: [String: String], call: CallContext) throws(DBusError) -> [String] {
        let collection = try context.collection(address, caller: call.sender)
        try CallLimits.checkAttributes(attributes, "A search has")
        let access = context.callerAccess(call)
        let ids = try engine(ObjectPaths.path(of: collection.id)) { () throws(KeychainError) in
            try access.visible(collection.search(attributes), in: collection)
        }
        return ObjectPaths.paths(of: ids, in: collection.id)
    }

    func createItem(properties: DBusValue, secret: DBusValue, replace: Bool, call: CallContext) throws(DBusError) -> (item: String, prompt: String) {
        let collection = try context.collection(address, caller: call.sender)
        func path() -> String { ObjectPaths.path(of: collection.id) }
        let properties = try PropertyDictionary(properties, of: SecretServiceInterfaces.item)
        let label = properties.string(SecretServiceNames.itemLabelProperty) ?? ""
        let attributes = try properties.stringDictionary(SecretServiceNames.itemAttributesProperty) ?? [:]
        let type = properties.string(SecretServiceNames.itemTypeProperty)
        let secret = try SecretEncoding.decode(secret, caller: call.sender, sessions: context.sessions)
        defer { SecretWipe.wipe(secret.value) }
        let times = properties.carriedTimes()
        let creator = context.callerAccess(call).caller
        let (id, replaced): (UUID, Bool)
        do throws(DBusError) {
            (id, replaced) = try engine(path()) { () throws(KeychainError) in
                try collection.createItem(label: label, attributes: attributes, type: type, secret: secret,
                                          replace: replace, times: times, creator: creator)
            }
        } catch where error.name == SecretServiceNames.errorIsLocked {
            // libsecret asks to unlock, then tries once more and prints this if still locked.
            // An item it would replace that is locked for the caller is not about the keychain.
            guard case .keychain(let name) = collection.id, (try? collection.isLocked()) == true else { throw error }
            throw SecretServiceError.isLocked(FirstStoreAdvice.locked(name, why: context.prompts.whyLastDismissed(owner: call.sender)))
        }
        context.itemsChanged(in: collection.id, created: replaced ? [] : [id], changed: replaced ? [id] : [])
        return (ObjectPaths.path(of: id, in: collection.id), SecretServiceNames.noObject)
    }

    func property(_ name: String, call: CallContext) throws(DBusError) -> DBusValue {
        let collection = try context.collection(address)
        func path() -> String { ObjectPaths.path(of: collection.id) }
        switch name {
        case SecretServiceProtocol.Property.items:
            let access = context.callerAccess(call)
            let ids = try engine(path()) { () throws(KeychainError) in try access.visible(collection.itemIDs(), in: collection) }
            return .objectPathArray(ObjectPaths.paths(of: ids, in: collection.id))
        case SecretServiceProtocol.Property.label:
            return .string(try engine(path()) { () throws(KeychainError) in try collection.label() })
        case SecretServiceProtocol.Property.locked:
            return .bool(try engine(path()) { () throws(KeychainError) in try collection.isLocked() })
        case SecretServiceProtocol.Property.created, SecretServiceProtocol.Property.modified:
            let times = try engine(path()) { () throws(KeychainError) in try collection.times() }
            return .uint64(UInt64(max(0, (name == SecretServiceProtocol.Property.created ? times.created : times.modified).timeIntervalSince1970)))
        default:
            throw .unknownProperty("No property \(name)")
        }
    }

    /// `Label` (kept in the keychain file; a locked keychain answers IsLocked, as for every change).
    /// A collection is every app's: a sandboxed one cannot rename it.
    func setProperty(_ name: String, _ value: DBusValue, call: CallContext) throws(DBusError) {
        let collection = try context.collection(address)
        guard name == SecretServiceProtocol.Property.label else { throw .propertyReadOnly("\(name) is read-only") }
        guard let label = value.stringValue else { throw .invalidArgs("Label is s") }
        try engine(ObjectPaths.path(of: collection.id)) { () throws(KeychainError) in try collection.setLabel(label) }
        context.signals.collectionLabelChanged(collection.id, to: label)
    }

    /// Deleting a keychain's collection deletes the keychain (no prompt, as in gnome-keyring; the
    /// engine's report of it sends CollectionDeleted); the in-memory one only forgets its items.
    private func delete(_ collection: any SecretCollection) throws(DBusError) {
        switch collection.id {
        case .session:
            context.clearSessionCollection()
        case .keychain(let name):
            try engine(ObjectPaths.path(of: collection.id)) { () throws(KeychainError) in try context.store.registry.deleteKeychain(name) }
            context.logger.info("deleted keychain \"\(name)\" through the Secret Service")
        }
    }
}

/// Runs engine code, turning its errors into Secret Service errors about `object` (built only
/// for an error: reads that succeed need no path).
func engine<T>(_ object: @autoclosure () -> String, _ body: () throws(KeychainError) -> T) throws(DBusError) -> T {
    do {
        return try body()
    } catch {
        throw error.secretServiceError(object())
    }
}
