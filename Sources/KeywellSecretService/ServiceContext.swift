import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol
import Logging

/// What every Secret Service object shares.
final class ServiceContext: Sendable {
    let store: KeychainStore
    let directory: CollectionDirectory
    let sessions: SessionManager
    let prompts: PromptManager
    let signals: SecretServiceSignals
    let logger: Logger
    /// Told about every unlock a prompt does (the daemon re-arms its idle timer and repairs a
    /// login keychain whose password drifted from the login password).
    let keychainUnlocked: @Sendable (String, SecretBytes) -> Void
    /// Access control (nil: every item is every caller's, as for a service built without it).
    let access: SecretServiceAccess?

    init(store: KeychainStore, directory: CollectionDirectory, sessions: SessionManager, prompts: PromptManager,
         signals: SecretServiceSignals, logger: Logger, access: SecretServiceAccess? = nil,
         keychainUnlocked: @escaping @Sendable (String, SecretBytes) -> Void) {
        self.store = store
        self.directory = directory
        self.sessions = sessions
        self.prompts = prompts
        self.signals = signals
        self.logger = logger
        self.keychainUnlocked = keychainUnlocked
        self.access = access
    }

    /// The context of a call to one of this service's objects, built once per call.
    func callContext(_ call: DBusMethodCall) -> CallContext { CallContext(call, callers: access?.callers, logger: logger) }

    /// What `call`'s caller may do with items (its identity worked out once for the call).
    func callerAccess(_ call: CallContext) -> CallerAccess { CallerAccess(access, call: call) }

    /// The collection an address stands for; NoSuchObject when an alias names none (its message
    /// says what to do, and why `caller`'s last prompt ended if it was dismissed). A keychain
    /// named by its path is not checked here: the engine's first use answers NoSuchObject.
    func collection(_ address: CollectionAddress, caller: String? = nil) throws(DBusError) -> any SecretCollection {
        if case .id(let id) = address { return directory.unchecked(id) }
        guard let collection = directory.resolve(address) else {
            switch address {
            case .alias(let alias):
                let why = caller.flatMap { prompts.whyLastDismissed(owner: $0) }
                throw SecretServiceError.noSuchObject(FirstStoreAdvice.missingAlias(alias, why: why))
            case .id(let id): throw SecretServiceError.noSuchObject("No collection \(ObjectPaths.path(of: id))")
            }
        }
        return collection
    }

    /// The collection (and item) an object path names, if they exist.
    func existingObject(_ path: String) -> (collection: any SecretCollection, item: UUID?)? {
        switch ObjectPaths.parse(path) {
        case .collection(let address)?:
            return directory.resolve(address).map { ($0, nil) }
        case .item(let address, let id)?:
            guard let collection = directory.resolve(address), (try? collection.contains(id)) == true else { return nil }
            return (collection, id)
        default:
            return nil
        }
    }

    /// Empties the in-memory collection: ItemDeleted for each item it held, then its `Items`.
    /// Returns how many items went.
    @discardableResult
    func clearSessionCollection() -> Int {
        let removed = directory.sessionCollection.clear()
        guard !removed.isEmpty else { return 0 }
        signals.itemsChanged(in: .session, deleted: removed)
        return removed.count
    }

    /// After a change to items of `collection`: the in-memory collection's signals go out here;
    /// a keychain's come from the engine (`KeychainStore.observeItems`), whatever face made it.
    func itemsChanged(in collection: CollectionID, created: [UUID] = [], changed: [UUID] = [], deleted: [UUID] = []) {
        if case .session = collection { signals.itemsChanged(in: .session, created: created, changed: changed, deleted: deleted) }
    }

    /// "/usr/bin/secret-tool (pid 42)" for prompts' text; nil when the bus cannot tell.
    static func describe(_ sender: String, on connection: DBusConnection) -> String? {
        guard !sender.isEmpty, let pid = try? connection.unixProcessID(of: sender) else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return "pid \(pid)" }
        let executable = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return "\(executable) (pid \(pid))"
    }
}

/// Reading the `a{sv}` property dictionaries of CreateItem and CreateCollection: unknown keys are
/// ignored (clients send properties of newer versions), the declared properties of the object
/// being made must have exactly their declared type (QualifiedProperties: no nested variants).
struct PropertyDictionary {
    private let values: QualifiedProperties

    init(_ value: DBusValue, of interface: DBusInterface) throws(DBusError) {
        values = try QualifiedProperties(value, declaredBy: [interface])
        try CallLimits.check(values.count, atMost: ServiceLimits.propertiesPerCall, "Properties have", "entries")
        if let label = values[SecretServiceNames.itemLabelProperty]?.stringValue {
            try CallLimits.checkBytes(label.utf8.count, .label, "The label")
        }
        if let type = values[SecretServiceNames.itemTypeProperty]?.stringValue {
            try CallLimits.checkBytes(type.utf8.count, .attributeValue, "The type")
        }
    }

    func string(_ key: String) -> String? { values[key]?.stringValue }

    /// Keywell's own `org.keywell.Item.Created` and `.Modified` (`t`, seconds since 1970), which
    /// `keywell migrate --from-secret-service` sends so that a copied item keeps its times; both
    /// or neither, and never in the future (a time ahead of now is taken as now).
    func carriedTimes() -> SecretServiceItemTimes? {
        guard let created = values[SecretServiceNames.carriedCreatedProperty]?.uint64Value,
              let modified = values[SecretServiceNames.carriedModifiedProperty]?.uint64Value else { return nil }
        let now = Date()
        func date(_ seconds: UInt64) -> Date { min(now, Date(timeIntervalSince1970: TimeInterval(min(seconds, UInt64(Int32.max) * 4)))) }
        return SecretServiceItemTimes(created: date(created), modified: date(modified))
    }

    func stringDictionary(_ key: String) throws(DBusError) -> [String: String]? {
        guard let dictionary = values[key]?.asStringStringDict() else { return nil }
        try CallLimits.checkAttributes(dictionary, "\(key) has")
        return dictionary
    }
}
