import Foundation
import KeywellAccess
import KeywellCore
import KeywellDBus
import KeywellProtocol

/// `/org/freedesktop/secrets/collection/<c>/<i>`: `org.freedesktop.Secret.Item`.
///
/// For a caller the item's access list does not trust, the item is locked (`Locked` true, its
/// secret and every change IsLocked) until an Unlock prompt lets it in; for a sandboxed caller
/// the list does not name, there is no such item (docs/secret-service.md, "Access control").
struct ItemObject: ItemMethods {
    let context: ServiceContext
    let address: CollectionAddress
    let id: UUID

    func delete(call: CallContext) throws(DBusError) -> String {
        let collection = try context.collection(address)
        // Only errors name the item: a read that succeeds builds no path.
        func path() -> String { ObjectPaths.path(of: id, in: collection.id) }
        try refuseIfLocked(verdict(id, in: collection, call: call, path), path)
        try engine(path()) { () throws(KeychainError) in try collection.deleteItem(id) }
        context.itemsChanged(in: collection.id, deleted: [id])
        return SecretServiceNames.noObject
    }

    /// `GetSecret`. An item locked for the caller alone (its keychain open) asks the access
    /// question and waits for the answer: Seahorse reads a password with this call only and
    /// never unlocks an item first (docs/secret-service.md, "GetSecret and Seahorse"). Allow
    /// answers with the secret; Deny (or no dialog) with IsLocked, as before. The read (list,
    /// MAC, secret) is done once: when it finds the question, the question and the secret's
    /// opening are what is left for a thread that may wait (`DBusAnswer`).
    func getSecret(session sessionPath: String, call: CallContext) throws(DBusError) -> DBusAnswer<DBusValue, DBusError> {
        let collection = try context.collection(address)
        func path() -> String { ObjectPaths.path(of: id, in: collection.id) }
        let access = context.callerAccess(call)
        // The list, the MAC and the secret in one read (docs/performance.md, "One read per call").
        let read = try engine(path()) { () throws(KeychainError) in
            try collection.read(.ids([id]), screen: access.screen, secrets: true)
        }
        defer { read.items.forEach { $0.secret.map { SecretWipe.wipe($0.value) } } }
        guard let found = read.items.first, found.verdict != .hidden else { throw SecretServiceError.noSuchObject("No item \(path())") }
        let session = try context.sessions.session(at: sessionPath, for: call.sender)
        if found.verdict == .mustAsk, !read.locked, let gate = access.access?.gate, let caller = access.caller {
            let id = id
            return .afterQuestion(DBusQuestion { () throws(DBusError) -> DBusValue in
                let named = try engine(path()) { () throws(KeychainError) in
                    try collection.access([id]).item(0).labelled(collection.item(id).label)
                }
                // Past the bus's default call timeout too: a caller that set a longer one still
                // waits (a person may take a minute), and the reply goes to the caller alone.
                guard gate.ask(caller, about: [named], interactive: true).allows else {
                    throw SecretServiceError.isLocked("\(path()) is locked for this application")
                }
                // The read opened no secret for a caller the list did not trust: now it may.
                let secrets = try engine(path()) { () throws(KeychainError) in try collection.secrets([id]) }
                defer { secrets.values.forEach { SecretWipe.wipe($0.value) } }
                guard let secret = secrets[id] else { throw SecretServiceError.noSuchObject("No item \(path())") }
                return try reply(secret, session, call)
            })
        }
        try refuseIfLocked(found.verdict, path)
        if read.locked { throw KeychainError(SecStatus.interactionNotAllowed, detail: "the collection is locked").secretServiceError(path()) }
        guard let secret = found.secret else { throw SecretServiceError.noSuchObject("No item \(path())") }
        return .answered(try reply(secret, session, call))
    }

    private func reply(_ secret: ItemSecret, _ session: SecretSession, _ call: CallContext) throws(DBusError) -> DBusValue {
        call.replyMayHoldSecrets = !session.isEncrypted
        return try SecretEncoding.encode(secret, for: session)
    }

    func setSecret(secret value: DBusValue, call: CallContext) throws(DBusError) {
        let collection = try context.collection(address)
        func path() -> String { ObjectPaths.path(of: id, in: collection.id) }
        let verdict = try verdict(id, in: collection, call: call, path)
        let secret = try SecretEncoding.decode(value, caller: call.sender, sessions: context.sessions)
        defer { SecretWipe.wipe(secret.value) }
        try refuseIfLocked(verdict, path)
        try engine(path()) { () throws(KeychainError) in try collection.setSecret(secret, of: id) }
        context.itemsChanged(in: collection.id, changed: [id])
    }

    func property(_ name: String, call: CallContext) throws(DBusError) -> DBusValue {
        let collection = try context.collection(address)
        func path() -> String { ObjectPaths.path(of: id, in: collection.id) }
        if name == SecretServiceProtocol.Property.locked {
            guard try engine(path(), { () throws(KeychainError) in try collection.contains(id) }) else {
                throw SecretServiceError.noSuchObject("No item \(path())")
            }
            if try verdict(id, in: collection, call: call, path) == .mustAsk { return .bool(true) }
            return .bool(try engine(path()) { () throws(KeychainError) in try collection.isLocked() })
        }
        _ = try verdict(id, in: collection, call: call, path)
        let item = try engine(path()) { () throws(KeychainError) in try collection.item(id) }
        guard let value = Self.value(name, of: item) else { throw .unknownProperty("No property \(name)") }
        return value
    }

    /// GetAll: the item read once (libsecret's item proxies ask for all six properties), not once
    /// per property.
    func allProperties(call: CallContext) throws(DBusError) -> [String: DBusValue] {
        let collection = try context.collection(address)
        func path() -> String { ObjectPaths.path(of: id, in: collection.id) }
        let verdict = try verdict(id, in: collection, call: call, path)
        let item = try engine(path()) { () throws(KeychainError) in try collection.item(id) }
        var locked = verdict == .mustAsk
        if !locked { locked = try engine(path()) { () throws(KeychainError) in try collection.isLocked() } }
        var values: [String: DBusValue] = [SecretServiceProtocol.Property.locked: .bool(locked)]
        for name in Self.rowProperties { values[name] = Self.value(name, of: item) }
        return values
    }

    /// The properties an item's row answers (`Locked` is its keychain's, or true for a caller
    /// the item's list does not trust).
    private static let rowProperties = {
        typealias Property = SecretServiceProtocol.Property
        return [Property.attributes, Property.label, Property.type, Property.created, Property.modified]
    }()

    private static func value(_ name: String, of item: SecretServiceItem) -> DBusValue? {
        switch name {
        case SecretServiceProtocol.Property.attributes: .stringStringDict(item.attributes)
        case SecretServiceProtocol.Property.label: .string(item.label)
        case SecretServiceProtocol.Property.type: .string(item.type)
        case SecretServiceProtocol.Property.created: .uint64(UInt64(max(0, item.created.timeIntervalSince1970)))
        case SecretServiceProtocol.Property.modified: .uint64(UInt64(max(0, item.modified.timeIntervalSince1970)))
        default: nil
        }
    }

    /// `Label` and `Attributes` (a locked keychain answers IsLocked, as for every change).
    func setProperty(_ name: String, _ value: DBusValue, call: CallContext) throws(DBusError) {
        let collection = try context.collection(address)
        func path() -> String { ObjectPaths.path(of: id, in: collection.id) }
        try refuseIfLocked(verdict(id, in: collection, call: call, path), path)
        switch name {
        case SecretServiceProtocol.Property.label:
            guard let label = value.stringValue else { throw .invalidArgs("Label is s") }
            try CallLimits.checkBytes(label.utf8.count, .label, "The label")
            try engine(path()) { () throws(KeychainError) in try collection.updateItem(id, label: label, attributes: nil) }
            context.itemsChanged(in: collection.id, changed: [id])
        case SecretServiceProtocol.Property.attributes:
            guard let attributes = value.asStringStringDict() else { throw .invalidArgs("Attributes is a{ss}") }
            try CallLimits.checkAttributes(attributes, "Attributes has")
            try engine(path()) { () throws(KeychainError) in try collection.updateItem(id, label: nil, attributes: attributes) }
            context.itemsChanged(in: collection.id, changed: [id])
        default:
            throw .propertyReadOnly("\(name) is read-only")
        }
    }

    /// The caller's verdict on the item; NoSuchObject when the item does not exist for it (a
    /// sandboxed caller the list does not name), exactly as for a missing item.
    private func verdict(_ id: UUID, in collection: any SecretCollection, call: CallContext,
                         _ path: () -> String) throws(DBusError) -> AccessVerdict {
        let verdict = try engine(path()) { () throws(KeychainError) in try context.callerAccess(call).verdict(id, in: collection) }
        if verdict == .hidden { throw SecretServiceError.noSuchObject("No item \(path())") }
        return verdict
    }

    /// IsLocked for an item locked for this caller: libsecret then calls Unlock, whose prompt asks.
    private func refuseIfLocked(_ verdict: AccessVerdict, _ path: () -> String) throws(DBusError) {
        if verdict == .mustAsk { throw SecretServiceError.isLocked("\(path()) is locked for this application") }
    }
}
