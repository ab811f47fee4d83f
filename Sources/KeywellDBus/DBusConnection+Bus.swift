/// Calls to the bus itself (`org.freedesktop.DBus`).
extension DBusConnection {
    public struct RequestNameFlags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Let a later requester with `replaceExisting` take the name.
        public static let allowReplacement = RequestNameFlags(rawValue: 1)
        /// Take the name from an owner that allowed replacement.
        public static let replaceExisting = RequestNameFlags(rawValue: 2)
        /// Fail instead of waiting in the queue.
        public static let doNotQueue = RequestNameFlags(rawValue: 4)
    }

    public enum RequestNameResult: UInt32, Sendable {
        case primaryOwner = 1
        case inQueue = 2
        case exists = 3
        case alreadyOwner = 4
    }

    public enum ReleaseNameResult: UInt32, Sendable {
        case released = 1
        case nonExistent = 2
        case notOwner = 3
    }

    public func requestName(_ name: String, flags: RequestNameFlags = []) throws(DBusError) -> RequestNameResult {
        try NameValidation.busName(name)
        let reply = try callBus("RequestName", [.string(name), .uint32(flags.rawValue)])
        guard let code = reply.first?.uint32Value, let result = RequestNameResult(rawValue: code) else {
            throw .failed("Unexpected RequestName reply \(reply)")
        }
        return result
    }

    @discardableResult
    public func releaseName(_ name: String) throws(DBusError) -> ReleaseNameResult {
        try NameValidation.busName(name)
        let reply = try callBus("ReleaseName", [.string(name)])
        guard let code = reply.first?.uint32Value, let result = ReleaseNameResult(rawValue: code) else {
            throw .failed("Unexpected ReleaseName reply \(reply)")
        }
        return result
    }

    /// The process id of the connection owning `busName` (a caller's `sender`).
    public func unixProcessID(of busName: String) throws(DBusError) -> UInt32 {
        try startUnixProcessIDQuery(of: busName).answer()
    }

    /// `unixProcessID(of:)` asked now and answered later (`ProcessIDQuery.answer()`), so that the
    /// caller can work while the bus answers.
    public func startUnixProcessIDQuery(of busName: String) throws(DBusError) -> ProcessIDQuery {
        try NameValidation.busName(busName)
        return ProcessIDQuery(call: try startCall(destination: StandardInterface.busName, path: StandardInterface.busPath,
                                                  interface: StandardInterface.bus, member: "GetConnectionUnixProcessID",
                                                  arguments: [.string(busName)]))
    }

    /// The uid of the connection owning `busName`.
    public func unixUser(of busName: String) throws(DBusError) -> UInt32 {
        try NameValidation.busName(busName)
        return try callBus("GetConnectionUnixUser", [.string(busName)]).uint32(at: 0)
    }

    /// The unique name owning `name`, or nil if nobody does.
    public func nameOwner(_ name: String) throws(DBusError) -> String? {
        try NameValidation.busName(name)
        do {
            return try callBus("GetNameOwner", [.string(name)]).string(at: 0)
        } catch where error.name == DBusError.Name.nameHasNoOwner {
            return nil
        }
    }

    public func nameHasOwner(_ name: String) throws(DBusError) -> Bool {
        try NameValidation.busName(name)
        return try callBus("NameHasOwner", [.string(name)]).bool(at: 0)
    }

    /// Whether the bus can start a service for `name` (its service file is in the bus's service
    /// folders): what a client needs before it relies on a D-Bus-activated helper.
    public func isActivatable(_ name: String) throws(DBusError) -> Bool {
        try callBus("ListActivatableNames", []).stringArray(at: 0).contains(name)
    }

    /// Asks the bus to start (D-Bus-activate) the service for `name`; true if it was started,
    /// false if it was already running.
    @discardableResult
    public func startService(_ name: String, timeout: Duration = .seconds(25)) throws(DBusError) -> Bool {
        try NameValidation.busName(name)
        let reply = try call(destination: StandardInterface.busName, path: StandardInterface.busPath, interface: StandardInterface.bus,
                             member: "StartServiceByName", arguments: [.string(name), .uint32(0)], timeout: timeout)
        return try reply.uint32(at: 0) == 1
    }

    /// `org.freedesktop.DBus.Peer.Ping` to `destination` (answered by libdbus in the peer).
    public func ping(_ destination: String, path: String = "/", timeout: Duration = .seconds(25)) throws(DBusError) {
        _ = try call(destination: destination, path: path, interface: StandardInterface.peer, member: StandardInterface.ping, timeout: timeout)
    }
}

/// A `GetConnectionUnixProcessID` on its way (`DBusConnection.startUnixProcessIDQuery`).
public struct ProcessIDQuery: Sendable {
    let call: DBusCallInFlight

    /// Waits for the bus's answer.
    public func answer() throws(DBusError) -> UInt32 { try call.reply().uint32(at: 0) }
}
