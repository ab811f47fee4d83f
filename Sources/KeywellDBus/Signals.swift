import KeywellSystem

/// A received signal.
public struct DBusSignal: Sendable {
    public var sender: String
    public var path: String
    public var interface: String
    public var member: String
    public var signature: DBusSignature
    public var arguments: [DBusValue]
}

/// What signals to receive: the bus match rule (sent with AddMatch) and the same test applied
/// locally, since the bus delivers the union of all of a connection's rules to it.
public struct DBusMatchRule: Sendable, Hashable {
    /// A unique name or a well-known name. The bus resolves well-known names; locally a
    /// well-known sender matches any sender (the bus already filtered by owner).
    public var sender: String?
    public var path: String?
    /// The path itself or anything below it.
    public var pathNamespace: String?
    public var interface: String?
    public var member: String?
    /// String arguments that must be equal (`arg0='…'`).
    public var arguments: [Int: String]

    public init(sender: String? = nil, path: String? = nil, pathNamespace: String? = nil, interface: String? = nil,
                member: String? = nil, arguments: [Int: String] = [:]) {
        self.sender = sender
        self.path = path
        self.pathNamespace = pathNamespace
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }

    /// `NameOwnerChanged` from the bus, optionally for one name (how a service notices that a
    /// client went away: arg0 = the client's unique name, arg2 = "").
    public static func nameOwnerChanged(name: String? = nil) -> DBusMatchRule {
        DBusMatchRule(sender: StandardInterface.busName, path: StandardInterface.busPath, interface: StandardInterface.bus,
                      member: "NameOwnerChanged", arguments: name.map { [0: $0] } ?? [:])
    }

    /// NameOwnerChanged for names left without an owner (arg2 ''): clients leaving the bus (their
    /// unique names, ":1.42", are never reused) and well-known names given up. Nothing when a
    /// client connects.
    public static func namesLeft() -> DBusMatchRule {
        var rule = nameOwnerChanged()
        rule.arguments[2] = ""
        return rule
    }

    /// The rule in the bus's syntax.
    public var ruleString: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            // Inside quotes only the apostrophe needs care: close, escaped quote, reopen.
            parts.append("\(key)='\(value.replacingOccurrencesOfApostrophe())'")
        }
        add("sender", sender)
        add("path", path)
        add("path_namespace", pathNamespace)
        add("interface", interface)
        add("member", member)
        for (index, value) in arguments.sorted(by: { $0.key < $1.key }) { add("arg\(index)", value) }
        return parts.joined(separator: ",")
    }

    func validate() throws(DBusError) {
        if let sender { try NameValidation.busName(sender) }
        if let path { try NameValidation.objectPath(path) }
        if let pathNamespace { try NameValidation.objectPath(pathNamespace) }
        if let interface { try NameValidation.interface(interface) }
        if let member { try NameValidation.member(member) }
        for (index, value) in arguments {
            guard (0...63).contains(index) else { throw .invalidArgs("Match rule argument index \(index) out of range") }
            try NameValidation.string(value)
        }
    }

    func matches(_ signal: DBusSignal) -> Bool {
        if let sender, sender != signal.sender {
            // A well-known name was resolved by the bus; only unique names compare exactly.
            if sender.hasPrefix(":") || sender == StandardInterface.busName { return false }
        }
        if let path, path != signal.path { return false }
        if let pathNamespace, !ObjectPathNamespace.path(signal.path, isIn: pathNamespace) { return false }
        if let interface, interface != signal.interface { return false }
        if let member, member != signal.member { return false }
        for (index, expected) in arguments {
            guard index < signal.arguments.count, signal.arguments[index].stringValue == expected
                    || signal.arguments[index].objectPathValue == expected else { return false }
        }
        return true
    }
}

/// A live subscription; `cancel()` removes the handler and the bus match rule.
public final class DBusSignalSubscription: Sendable {
    let id: UInt64
    public let rule: DBusMatchRule
    private weak let connection: DBusConnection?

    init(id: UInt64, rule: DBusMatchRule, connection: DBusConnection) {
        self.id = id
        self.rule = rule
        self.connection = connection
    }

    public func cancel() {
        connection?.removeMatch(self)
    }
}

/// The handlers of one connection. Signals are decoded and delivered in arrival order on one
/// serial queue, so a handler sees e.g. successive PropertiesChanged in the order sent.
// @unchecked: `handlers` and `nextID` are only touched under `lock`.
final class SignalSubscriptions: @unchecked Sendable {
    private let lock = ConditionLock()
    private var handlers: [UInt64: (DBusMatchRule, @Sendable (DBusSignal) -> Void)] = [:]
    private var nextID: UInt64 = 1

    var isEmpty: Bool { lock.withLock { handlers.isEmpty } }

    func add(_ rule: DBusMatchRule, _ handler: @escaping @Sendable (DBusSignal) -> Void) -> UInt64 {
        lock.withLock {
            let id = nextID
            nextID += 1
            handlers[id] = (rule, handler)
            return id
        }
    }

    @discardableResult
    func remove(_ id: UInt64) -> Bool {
        lock.withLock { handlers.removeValue(forKey: id) != nil }
    }

    /// Runs on the delivery queue.
    func deliver(_ message: MessageRef) {
        let current = lock.withLock { Array(handlers.values) }
        guard !current.isEmpty, let arguments = try? message.arguments() else { return }
        let signal = DBusSignal(sender: message.sender ?? "", path: message.path ?? "/", interface: message.interface ?? "",
                                member: message.member ?? "", signature: message.signature, arguments: arguments)
        for (rule, handler) in current where rule.matches(signal) {
            handler(signal)
        }
    }
}

extension String {
    fileprivate func replacingOccurrencesOfApostrophe() -> String {
        guard contains("'") else { return self }
        return split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''")
    }
}
