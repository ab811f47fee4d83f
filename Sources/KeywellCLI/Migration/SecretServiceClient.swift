import Dispatch
import FoundationEssentials
import Glibc
import KeywellDBus
import KeywellProtocol

/// One Secret Service reached by its unique bus name, as a client would use it: a `plain`
/// session (the session bus is the user's own), properties, prompts run to completion. Used by
/// `keywell migrate --from-secret-service` on both ends: the service that owns
/// `org.freedesktop.secrets` now, and keywelld (whose Secret Service objects answer on its own
/// connection whether or not it owns that name). Every list an answer holds is checked against
/// its cap before it is used (docs/migration.md, "From any running Secret Service").
final class SecretServiceClient {
    typealias Names = SecretServiceProtocol

    struct Secret {
        var value: [UInt8]
        var contentType: String
    }

    struct ItemInfo {
        var label: String
        var attributes: [String: String]
        var created: UInt64
        var modified: UInt64
    }

    let connection: DBusConnection
    let destination: String
    /// Who it is, for messages ("/usr/bin/gnome-keyring-daemon (pid 42)").
    let description: String
    private var session = Names.noObject
    /// How long a prompt may wait for its person.
    static let promptTimeout: Duration = .seconds(600)

    init(connection: DBusConnection, destination: String) {
        self.connection = connection
        self.destination = destination
        description = Self.describe(destination, on: connection)
    }

    deinit {
        if session != Names.noObject {
            try? connection.callWithoutReply(destination: destination, path: session, interface: Names.sessionInterface, member: SecretServiceProtocol.Member.close)
        }
    }

    // MARK: Calls

    func call(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = []) throws(DBusError) -> [DBusValue] {
        try connection.call(destination: destination, path: path, interface: interface, member: member,
                            arguments: arguments, autoStart: false)
    }

    func openSession() throws(DBusError) {
        let reply = try call(Names.servicePath, Names.serviceInterface, SecretServiceProtocol.Member.openSession,
                             [.string(Names.plainAlgorithm), .variant(.string(""))])
        guard reply.count == 2, let path = reply[1].objectPathValue else { throw .failed("OpenSession answered \(reply)") }
        session = path
    }

    func property(_ path: String, _ interface: String, _ name: String) throws(DBusError) -> DBusValue {
        let reply = try call(path, StandardInterface.properties, "Get", [.string(interface), .string(name)])
        guard let value = reply.first?.variantValue else { throw .failed("\(path) \(name): not a variant") }
        return value
    }

    func paths(_ value: DBusValue, what: String, cap: Int) throws(MigrationError) -> [String] {
        guard let paths = value.objectPathArrayValue else { throw .unexpected("\(description): \(what) is not a list of object paths") }
        guard paths.count <= cap else {
            throw .tooMany("\(description) lists \(paths.count) \(what); at most \(cap) are taken (ServiceLimits)")
        }
        return paths
    }

    func collections() throws(MigrationError) -> [String] {
        try paths(dbus { () throws(DBusError) in try property(Names.servicePath, Names.serviceInterface, SecretServiceProtocol.Property.collections) },
                  what: "collections", cap: ServiceLimits.migrationCollections)
    }

    func items(of collection: String) throws(MigrationError) -> [String] {
        try paths(dbus { () throws(DBusError) in try property(collection, Names.collectionInterface, SecretServiceProtocol.Property.items) },
                  what: "items in \(collection)", cap: ServiceLimits.objectPathsPerCall)
    }

    func label(of collection: String) throws(DBusError) -> String {
        try property(collection, Names.collectionInterface, SecretServiceProtocol.Property.label).stringValue ?? ""
    }

    func isLocked(_ collection: String) throws(DBusError) -> Bool {
        try property(collection, Names.collectionInterface, SecretServiceProtocol.Property.locked).boolValue ?? true
    }

    /// The collection an alias names; nil for none.
    func readAlias(_ alias: String) throws(DBusError) -> String? {
        let path = try call(Names.servicePath, Names.serviceInterface, SecretServiceProtocol.Member.readAlias, [.string(alias)]).first?.objectPathValue
        return path == Names.noObject ? nil : path
    }

    func setAlias(_ alias: String, to collection: String) throws(DBusError) {
        _ = try call(Names.servicePath, Names.serviceInterface, SecretServiceProtocol.Member.setAlias, [.string(alias), .objectPath(collection)])
    }

    func itemInfo(_ item: String) throws(MigrationError) -> ItemInfo {
        let reply = try dbus { () throws(DBusError) in try call(item, StandardInterface.properties, "GetAll", [.string(Names.itemInterface)]) }
        guard let all = reply.first?.asStringVariantDict() else { throw .unexpected("\(item): GetAll answered no a{sv}") }
        guard let attributes = all[SecretServiceProtocol.Property.attributes]?.unwrappingVariants.asStringStringDict() else {
            throw .unexpected("\(item) has no Attributes")
        }
        guard attributes.count <= ServiceLimits.attributesPerItem else {
            throw .tooMany("\(item) has \(attributes.count) attributes; at most \(ServiceLimits.attributesPerItem) are taken (ServiceLimits)")
        }
        return ItemInfo(label: all[SecretServiceProtocol.Property.label]?.unwrappingVariants.stringValue ?? "", attributes: attributes,
                        created: all[SecretServiceProtocol.Property.created]?.unwrappingVariants.uint64Value ?? 0,
                        modified: all[SecretServiceProtocol.Property.modified]?.unwrappingVariants.uint64Value ?? 0)
    }

    /// The secrets of `items` (one `GetSecrets`); items the service left out are missing.
    func secrets(of items: [String]) throws(MigrationError) -> [String: Secret] {
        let reply = try dbus { () throws(DBusError) in
            try call(Names.servicePath, Names.serviceInterface, SecretServiceProtocol.Member.getSecrets, [.objectPathArray(items), .objectPath(session)])
        }
        guard let entries = reply.first?.dictionaryEntries else { throw .unexpected("\(description): GetSecrets answered no a{o(oayays)}") }
        guard entries.count <= items.count else {
            throw .tooMany("\(description) answered \(entries.count) secrets for \(items.count) items")
        }
        var secrets: [String: Secret] = [:]
        for entry in entries {
            guard let path = entry.key.objectPathValue, let fields = entry.value.structureFields, fields.count == 4,
                  let value = fields[2].bytesValue, let contentType = fields[3].stringValue else {
                throw .unexpected("\(description): a secret that is not (oayays)")
            }
            secrets[path] = Secret(value: value, contentType: contentType)
        }
        return secrets
    }

    func search(_ collection: String, _ attributes: [String: String]) throws(MigrationError) -> [String] {
        let reply = try dbus { () throws(DBusError) in
            try call(collection, Names.collectionInterface, SecretServiceProtocol.Member.searchItems, [.stringStringDict(attributes)])
        }
        return try paths(reply.first ?? .objectPathArray([]), what: "matches in \(collection)", cap: ServiceLimits.objectPathsPerCall)
    }

    /// Makes (or, with `replace`, replaces) an item, carrying its times over (Keywell's own keys).
    func createItem(in collection: String, _ info: ItemInfo, _ secret: Secret, replace: Bool) throws(DBusError) {
        let properties = DBusValue.stringVariantDict([
            (Names.itemLabelProperty, .string(info.label)),
            (Names.itemAttributesProperty, .stringStringDict(info.attributes)),
            (Names.carriedCreatedProperty, .uint64(info.created)),
            (Names.carriedModifiedProperty, .uint64(info.modified)),
        ])
        let value = DBusValue.structure([.objectPath(session), .bytes([]), .bytes(secret.value), .string(secret.contentType)])
        _ = try call(collection, Names.collectionInterface, SecretServiceProtocol.Member.createItem, [properties, value, .bool(replace)])
    }

    /// Makes a collection; its prompt (a new password) runs if the service asks for one. Nil
    /// when the prompt was dismissed.
    func createCollection(label: String, alias: String) throws(DBusError) -> String? {
        let reply = try call(Names.servicePath, Names.serviceInterface, SecretServiceProtocol.Member.createCollection,
                             [.stringVariantDict([(Names.collectionLabelProperty, .string(label))]), .string(alias)])
        guard reply.count == 2, let made = reply[0].objectPathValue, let prompt = reply[1].objectPathValue else {
            throw .failed("CreateCollection answered \(reply)")
        }
        if made != Names.noObject { return made }
        let (dismissed, result) = try runPrompt(prompt)
        guard !dismissed, let path = result.unwrappingVariants.objectPathValue, path != Names.noObject else { return nil }
        return path
    }

    /// Unlocks a collection, running the service's own prompt if it has one; false when dismissed.
    func unlock(_ collection: String) throws(DBusError) -> Bool {
        let reply = try call(Names.servicePath, Names.serviceInterface, SecretServiceProtocol.Member.unlock, [.objectPathArray([collection])])
        guard reply.count == 2, let prompt = reply[1].objectPathValue else { throw .failed("Unlock answered \(reply)") }
        if prompt == Names.noObject { return reply[0].objectPathArrayValue?.contains(collection) ?? false }
        let (dismissed, _) = try runPrompt(prompt)
        return !dismissed && (try? isLocked(collection)) == false
    }

    /// Calls `Prompt` and waits for its `Completed` (a person may take minutes).
    func runPrompt(_ prompt: String) throws(DBusError) -> (dismissed: Bool, result: DBusValue) {
        let done = DispatchSemaphore(value: 0)
        let outcome = Outcome()
        let rule = DBusMatchRule(sender: destination, path: prompt, interface: Names.promptInterface, member: SecretServiceProtocol.Member.completed)
        let subscription = try connection.addMatch(rule) { signal in
            guard signal.arguments.count == 2 else { return }
            outcome.set((signal.arguments[0].boolValue ?? true, signal.arguments[1]))
            done.signal()
        }
        defer { connection.removeMatch(subscription) }
        _ = try call(prompt, Names.promptInterface, SecretServiceProtocol.Member.prompt, [.string("")])
        let seconds = Int(Self.promptTimeout.components.seconds)
        guard done.wait(timeout: .now() + .seconds(seconds)) == .success, let result = outcome.value else {
            _ = try? call(prompt, Names.promptInterface, SecretServiceProtocol.Member.dismiss)
            throw .failed("\(description)'s prompt got no answer in \(seconds / 60) minutes")
        }
        return result
    }

    // @unchecked: `stored` is only touched on the serial queue `lock`.
    private final class Outcome: @unchecked Sendable {
        private let lock = DispatchQueue(label: "prompt-outcome")
        private var stored: (Bool, DBusValue)?
        func set(_ value: (Bool, DBusValue)) { lock.sync { if stored == nil { stored = value } } }
        var value: (Bool, DBusValue)? { lock.sync { stored } }
    }

    static func describe(_ name: String, on connection: DBusConnection) -> String {
        guard let pid = try? connection.unixProcessID(of: name) else { return name }
        var buffer = [CChar](repeating: 0, count: 4097)
        let length = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return "\(name) (pid \(pid))" }
        return "\(String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)) (pid \(pid))"
    }
}

/// Why a migration stopped, in words for the person running it.
enum MigrationError: Error {
    case tooMany(String)
    case unexpected(String)
    case bus(DBusError)
    case refused(String)

    var message: String {
        switch self {
        case .tooMany(let text), .unexpected(let text), .refused(let text): text
        case .bus(let error): "\(error.name): \(error.message)"
        }
    }
}

/// Runs a D-Bus call, its error as a MigrationError.
func dbus<T>(_ body: () throws(DBusError) -> T) throws(MigrationError) -> T {
    do { return try body() } catch { throw .bus(error) }
}
