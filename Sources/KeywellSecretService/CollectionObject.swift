import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol

/// `/org/freedesktop/secrets/collection/<c>` and the alias paths that stand for one:
/// `org.freedesktop.Secret.Collection`.
struct CollectionObject {
    let context: ServiceContext

    func handle(_ call: DBusMethodCall, _ address: CollectionAddress) throws(DBusError) -> [DBusValue] {
        let collection = try context.collection(address)
        let path = ObjectPaths.path(of: collection.id)
        let arguments = call.arguments
        switch call.member {
        case "Delete":
            try delete(collection)
            return [.objectPath(SecretServiceNames.noObject)]
        case "SearchItems":
            let attributes = try arguments.stringStringDict(at: 0)
            let ids = try engine(path) { () throws(KeychainError) in try collection.search(attributes) }
            return [.objectPathArray(ids.map { ObjectPaths.path(of: $0, in: collection.id) })]
        case "CreateItem":
            let properties = try PropertyDictionary(arguments.argument(0))
            let label = try properties.string(SecretServiceNames.itemLabelProperty) ?? ""
            let attributes = try properties.stringDictionary(SecretServiceNames.itemAttributesProperty) ?? [:]
            let type = try properties.string(SecretServiceNames.itemTypeProperty)
            let secret = try SecretEncoding.decode(arguments.argument(1), caller: call.sender, sessions: context.sessions)
            let replace = try arguments.bool(at: 2)
            let (id, replaced) = try engine(path) { () throws(KeychainError) in
                try collection.createItem(label: label, attributes: attributes, type: type, secret: secret, replace: replace)
            }
            if replaced {
                context.signals.itemPropertiesChanged(id, in: collection.id, ["Label": .string(label)])
            } else {
                context.signals.itemCreated(id, in: collection.id)
            }
            return [.objectPath(ObjectPaths.path(of: id, in: collection.id)), .objectPath(SecretServiceNames.noObject)]
        default:
            throw .unknownMethod("No method \(call.member) on a collection")
        }
    }

    func property(_ name: String, _ address: CollectionAddress) throws(DBusError) -> DBusValue {
        let collection = try context.collection(address)
        let path = ObjectPaths.path(of: collection.id)
        switch name {
        case "Items":
            let ids = try engine(path) { () throws(KeychainError) in try collection.itemIDs() }
            return .objectPathArray(ids.map { ObjectPaths.path(of: $0, in: collection.id) })
        case "Label":
            if case .keychain(let name) = collection.id, !context.store.keychainExists(name) {
                throw SecretServiceError.noSuchObject("No collection \(path)")
            }
            return .string(collection.label)
        case "Locked":
            return .bool(try engine(path) { () throws(KeychainError) in try collection.isLocked() })
        case "Created", "Modified":
            let times = try engine(path) { () throws(KeychainError) in try collection.times() }
            return .uint64(UInt64(max(0, (name == "Created" ? times.created : times.modified).timeIntervalSince1970)))
        default:
            throw .unknownProperty("No property \(name)")
        }
    }

    /// Only the in-memory collection has a label of its own; a keychain's label is its name.
    func setProperty(_ name: String, _ value: DBusValue, _ address: CollectionAddress) throws(DBusError) {
        let collection = try context.collection(address)
        guard name == "Label", let label = value.stringValue else { throw .propertyReadOnly("\(name) is read-only") }
        if case .keychain(let name) = collection.id, !context.store.keychainExists(name) {
            throw SecretServiceError.noSuchObject("No collection \(ObjectPaths.path(of: collection.id))")
        }
        guard let memory = collection as? MemoryCollection else {
            throw .notSupported("A keychain's label is its name; rename keychains with the keywell command")
        }
        memory.setLabel(label)
        context.signals.collectionChanged(memory.id)
    }

    /// Deleting a keychain's collection deletes the keychain (no prompt, as in gnome-keyring); the
    /// in-memory one only forgets its items.
    private func delete(_ collection: any SecretCollection) throws(DBusError) {
        switch collection.id {
        case .session:
            context.directory.sessionCollection.clear()
            context.signals.collectionChanged(.session)
        case .keychain(let name):
            try engine(ObjectPaths.path(of: collection.id)) { () throws(KeychainError) in try context.store.deleteKeychain(name) }
            context.logger.info("deleted keychain \"\(name)\" through the Secret Service")
            context.signals.collectionDeleted(collection.id)
        }
    }
}

/// Runs engine code, turning its errors into Secret Service errors about `object`.
func engine<T>(_ object: String, _ body: () throws(KeychainError) -> T) throws(DBusError) -> T {
    do {
        return try body()
    } catch {
        throw error.secretServiceError(object)
    }
}
