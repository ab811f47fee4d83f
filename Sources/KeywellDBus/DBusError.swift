/// A D-Bus error: the error name that travels on the bus plus its human-readable message.
/// Every failure of this layer is one of these (typed throws), so a handler can forward an
/// error from a nested call unchanged and a client can switch on `name`.
public struct DBusError: Error, Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { message.isEmpty ? name : "\(name): \(message)" }

    /// True for the error a call gets when no reply came within its timeout.
    public var isTimeout: Bool { name == Name.noReply || name == Name.timeout || name == Name.timedOut }

    /// Well-known error names (the bus and the D-Bus specification's standard interfaces).
    public enum Name {
        public static let failed = "org.freedesktop.DBus.Error.Failed"
        public static let noMemory = "org.freedesktop.DBus.Error.NoMemory"
        public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
        public static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
        public static let noReply = "org.freedesktop.DBus.Error.NoReply"
        public static let timeout = "org.freedesktop.DBus.Error.Timeout"
        public static let timedOut = "org.freedesktop.DBus.Error.TimedOut"
        public static let disconnected = "org.freedesktop.DBus.Error.Disconnected"
        public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
        public static let invalidSignature = "org.freedesktop.DBus.Error.InvalidSignature"
        public static let notSupported = "org.freedesktop.DBus.Error.NotSupported"
        public static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
        public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
        public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
        public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
        public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
        public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
        public static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"
        public static let objectPathInUse = "org.freedesktop.DBus.Error.ObjectPathInUse"
    }

    public static func failed(_ message: String) -> DBusError { .init(name: Name.failed, message: message) }
    public static func invalidArgs(_ message: String) -> DBusError { .init(name: Name.invalidArgs, message: message) }
    public static func notSupported(_ message: String) -> DBusError { .init(name: Name.notSupported, message: message) }
    public static func accessDenied(_ message: String) -> DBusError { .init(name: Name.accessDenied, message: message) }
    public static func disconnected(_ message: String = "The connection is closed") -> DBusError {
        .init(name: Name.disconnected, message: message)
    }
    public static func noMemory() -> DBusError { .init(name: Name.noMemory, message: "Out of memory") }
    public static func unknownMethod(_ message: String) -> DBusError { .init(name: Name.unknownMethod, message: message) }
    public static func unknownObject(_ message: String) -> DBusError { .init(name: Name.unknownObject, message: message) }
    public static func unknownInterface(_ message: String) -> DBusError { .init(name: Name.unknownInterface, message: message) }
    public static func unknownProperty(_ message: String) -> DBusError { .init(name: Name.unknownProperty, message: message) }
    public static func propertyReadOnly(_ message: String) -> DBusError { .init(name: Name.propertyReadOnly, message: message) }
    public static func timedOut(after timeout: Duration) -> DBusError {
        .init(name: Name.noReply, message: "No reply within \(timeout) (timeout)")
    }
}
