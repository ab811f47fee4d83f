import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSystem
import Logging

/// The Secret Service's signals, on the connection the service is attached to (none: dropped),
/// in gnome-keyring's order and with `PropertiesChanged` carrying new values, never bare
/// invalidations (docs/secret-service.md, "Signals").
final class SecretServiceSignals: Sendable {
    private let logger: Logger
    /// Where the new values of `Items`, `Collections` and item properties are read.
    private let directory: CollectionDirectory
    /// When `Items` goes out after a change (a big keychain's list is paced).
    private let itemsPacer: ItemsPropertyPacer
    private let connection = Protected<DBusConnection?>(nil)
    /// Every change's signals, in the order of the changes: a call's item signals wait here for
    /// its reply, and a later change's signals queue behind them (`inOrder`), whichever thread
    /// sends them.
    let ordered = ItemSignalQueue()

    init(directory: CollectionDirectory, logger: Logger, itemsPacer: ItemsPropertyPacer = ItemsPropertyPacer()) {
        self.directory = directory
        self.logger = logger
        self.itemsPacer = itemsPacer
    }

    func use(_ connection: DBusConnection?) {
        self.connection.withLock { $0 = connection }
    }

    func collectionChanged(_ id: CollectionID) { service(SecretServiceProtocol.Member.collectionChanged, id) }

    /// Sends `send`'s signals after every earlier change's still waiting. Queued, not sent after
    /// a flush: while another thread is sending the queue, a flush returns at once, and signals
    /// sent then could overtake the ones it has not reached yet.
    func inOrder(_ send: @escaping @Sendable () -> Void) {
        ordered.enqueue(send)
        ordered.flush()
    }

    /// The list of collections changed: `CollectionCreated` and `CollectionDeleted` for each one
    /// that appeared or went, then `Collections` with its new value, then `CollectionChanged` for
    /// those the alias `default` left or joined. Never a bare invalidation: libsecret's handlers
    /// of the first two read the cached `Collections` and crash without one.
    func collectionsChanged(_ change: CollectionDirectory.ListChange) {
        change.created.forEach { service(SecretServiceProtocol.Member.collectionCreated, $0) }
        change.deleted.forEach {
            service(SecretServiceProtocol.Member.collectionDeleted, $0)
            itemsPacer.forget($0)
        }
        emitProperties(ObjectPaths.root, SecretServiceNames.serviceInterface,
                       [SecretServiceProtocol.Property.collections: .objectPathArray(change.collections.map(ObjectPaths.path(of:)))])
        change.defaultMoved.forEach { service(SecretServiceProtocol.Member.collectionChanged, $0) }
    }

    /// The listing of keychains changed: the collections that came or went, as
    /// `collectionsChanged` tells them.
    func collectionListChanged() {
        directory.listChanged { collectionsChanged($0) }
    }

    /// A collection's `Label` changed: `CollectionChanged`, then the new label.
    func collectionLabelChanged(_ id: CollectionID, to label: String) {
        inOrder { [self] in
            collectionChanged(id)
            emitProperties(ObjectPaths.path(of: id), SecretServiceNames.collectionInterface, [SecretServiceProtocol.Property.label: .string(label)])
        }
    }

    /// A collection's `Locked` changed (through any face, or a timer). Up to
    /// `ServiceLimits.itemsSignalledOnLockChange` items, gnome-keyring's set: `ItemChanged` for
    /// each item, `CollectionChanged`, then `Locked` of each item and of the collection. A bigger
    /// collection sends only `CollectionChanged` and its own `Locked`, which is what Seahorse
    /// watches (docs/secret-service.md, "Big collections").
    func lockChanged(_ id: CollectionID, locked: Bool) {
        let cap = ServiceLimits.itemsSignalledOnLockChange
        let first = (try? directory.unchecked(id).itemIDs(atMost: cap + 1)) ?? []
        let items = first.count > cap ? [] : first
        items.forEach { item(SecretServiceProtocol.Member.itemChanged, $0, id) }
        collectionChanged(id)
        for item in items {
            emitProperties(ObjectPaths.path(of: item, in: id), SecretServiceNames.itemInterface, [SecretServiceProtocol.Property.locked: .bool(locked)])
        }
        emitProperties(ObjectPaths.path(of: id), SecretServiceNames.collectionInterface, [SecretServiceProtocol.Property.locked: .bool(locked)])
    }

    /// Items made, changed or deleted in one collection by one call: `ItemCreated` and
    /// `ItemDeleted` for each, then the collection's new `Items` (a long list paced, see
    /// `ItemsPropertyPacer`); `ItemChanged` for each changed item, each followed by its new
    /// `Label`, `Attributes` and `Modified`.
    func itemsChanged(in id: CollectionID, created: [UUID] = [], changed: [UUID] = [], deleted: [UUID] = []) {
        created.forEach { item(SecretServiceProtocol.Member.itemCreated, $0, id) }
        deleted.forEach { item(SecretServiceProtocol.Member.itemDeleted, $0, id) }
        let collection = directory.unchecked(id)
        if !created.isEmpty || !deleted.isEmpty {
            itemsPacer.changed(id) { [self] in
                guard let items = try? directory.unchecked(id).itemIDs() else { return nil }
                emitProperties(ObjectPaths.path(of: id), SecretServiceNames.collectionInterface,
                               [SecretServiceProtocol.Property.items: .objectPathArray(ObjectPaths.paths(of: items, in: id))])
                return items.count
            }
        }
        for item in changed {
            self.item(SecretServiceProtocol.Member.itemChanged, item, id)
            // Gone again already (a later call deleted it): its ItemDeleted follows.
            guard let now = try? collection.item(item) else { continue }
            emitProperties(ObjectPaths.path(of: item, in: id), SecretServiceNames.itemInterface, [
                SecretServiceProtocol.Property.label: .string(now.label), SecretServiceProtocol.Property.attributes: .stringStringDict(now.attributes),
                SecretServiceProtocol.Property.modified: .uint64(UInt64(max(0, now.modified.timeIntervalSince1970))),
            ])
        }
    }

    /// Sent to the prompt's owner only: clients such as secretstorage wait for it without asking
    /// the bus to route it to them (no AddMatch), as gnome-keyring also unicasts it.
    func promptCompleted(_ number: UInt64, owner: String, dismissed: Bool, result: DBusValue) {
        emit { connection throws(DBusError) in
            try connection.emitSignal(path: ObjectPaths.promptPath(number), interface: SecretServiceNames.promptInterface,
                                      member: SecretServiceProtocol.Member.completed, arguments: [.bool(dismissed), .variant(result)],
                                      destination: owner.isEmpty ? nil : owner)
        }
    }

    private func emitProperties(_ path: String, _ interface: String, _ changed: [String: DBusValue]) {
        emit { connection throws(DBusError) in
            try connection.emitPropertiesChanged(path: path, interface: interface, changed: changed)
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
        guard let connection = connection.withLock({ $0 }) else { return }
        do {
            try send(connection)
        } catch {
            logger.warning("cannot send a Secret Service signal: \(error.message)")
        }
    }
}
