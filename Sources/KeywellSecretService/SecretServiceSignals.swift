import Foundation
import KeywellDBus
import Logging

/// The Secret Service's signals, on the connection the service is attached to (none: dropped).
final class SecretServiceSignals: @unchecked Sendable {
    private let logger: Logger
    private let lock = NSLock()
    private var connection: DBusConnection?

    init(logger: Logger) {
        self.logger = logger
    }

    func use(_ connection: DBusConnection?) {
        lock.withLock { self.connection = connection }
    }

    func collectionChanged(_ id: CollectionID) { service("CollectionChanged", id) }

    /// The list of collections changed: `CollectionCreated` and `CollectionDeleted` for each one
    /// that appeared or went, then `Collections` with its new value, then `CollectionChanged` for
    /// those the alias `default` left or joined (gnome-keyring's order). Never a bare
    /// invalidation: libsecret's handlers of the first two extend or shrink the cached
    /// `Collections`, and crash (Seahorse with them) when it was invalidated.
    func collectionsChanged(_ change: CollectionDirectory.ListChange) {
        change.created.forEach { service("CollectionCreated", $0) }
        change.deleted.forEach { service("CollectionDeleted", $0) }
        emit { connection throws(DBusError) in
            try connection.emitPropertiesChanged(path: ObjectPaths.root, interface: SecretServiceNames.serviceInterface,
                                                 changed: ["Collections": .objectPathArray(change.collections.map(ObjectPaths.path(of:)))])
        }
        change.defaultMoved.forEach { service("CollectionChanged", $0) }
    }

    /// A collection's `Label` changed.
    func collectionLabelChanged(_ id: CollectionID, to label: String) {
        emit { connection throws(DBusError) in
            try connection.emitPropertiesChanged(path: ObjectPaths.path(of: id), interface: SecretServiceNames.collectionInterface,
                                                 changed: ["Label": .string(label)])
        }
        collectionChanged(id)
    }

    func itemCreated(_ item: UUID, in collection: CollectionID) { self.item("ItemCreated", item, collection) }
    func itemDeleted(_ item: UUID, in collection: CollectionID) { self.item("ItemDeleted", item, collection) }
    func itemChanged(_ item: UUID, in collection: CollectionID) { self.item("ItemChanged", item, collection) }

    /// A collection's `Locked` changed (through any face, or a timer).
    func lockChanged(_ id: CollectionID, locked: Bool) {
        emit { connection throws(DBusError) in
            try connection.emitPropertiesChanged(path: ObjectPaths.path(of: id), interface: SecretServiceNames.collectionInterface,
                                                 changed: ["Locked": .bool(locked)])
        }
        collectionChanged(id)
    }

    /// An item's label or attributes changed.
    func itemPropertiesChanged(_ item: UUID, in collection: CollectionID, _ changed: [String: DBusValue]) {
        emit { connection throws(DBusError) in
            try connection.emitPropertiesChanged(path: ObjectPaths.path(of: item, in: collection),
                                                 interface: SecretServiceNames.itemInterface, changed: changed)
        }
        itemChanged(item, in: collection)
    }

    /// Sent to the prompt's owner only: clients such as secretstorage wait for it without asking
    /// the bus to route it to them (no AddMatch), as gnome-keyring also unicasts it.
    func promptCompleted(_ number: UInt64, owner: String, dismissed: Bool, result: DBusValue) {
        emit { connection throws(DBusError) in
            try connection.emitSignal(path: ObjectPaths.promptPath(number), interface: SecretServiceNames.promptInterface,
                                      member: "Completed", arguments: [.bool(dismissed), .variant(result)],
                                      destination: owner.isEmpty ? nil : owner)
        }
    }

    private func service(_ member: String, _ id: CollectionID) {
        emit { connection throws(DBusError) in
            try connection.emitSignal(path: ObjectPaths.root, interface: SecretServiceNames.serviceInterface,
                                      member: member, arguments: [.objectPath(ObjectPaths.path(of: id))])
        }
    }

    private func item(_ member: String, _ item: UUID, _ collection: CollectionID) {
        emit { connection throws(DBusError) in
            try connection.emitSignal(path: ObjectPaths.path(of: collection), interface: SecretServiceNames.collectionInterface,
                                      member: member, arguments: [.objectPath(ObjectPaths.path(of: item, in: collection))])
        }
    }

    private func emit(_ send: (DBusConnection) throws(DBusError) -> Void) {
        guard let connection = lock.withLock({ connection }) else { return }
        do {
            try send(connection)
        } catch {
            logger.warning("cannot send a Secret Service signal: \(error.message)")
        }
    }
}
