import CDBus

#if canImport(Glibc)
import Glibc
#endif

/// Checks names before they reach libdbus: libdbus treats an invalid name passed to its API as
/// a programming error and aborts the process, so anything coming from outside is checked here.
/// Public for readers of introspection XML outside this module (the test support's parser).
public enum NameValidation {
    private typealias Validator = (UnsafePointer<CChar>?, UnsafeMutablePointer<CDBus.DBusError>?) -> dbus_bool_t

    private static func check(_ value: String, kind: String, _ validator: Validator) throws(DBusError) {
        if value.containsNUL { throw .invalidArgs("Invalid \(kind) (contains NUL): \(value.debugDescription)") }
        let valid = value.withCString { validator($0, nil) } != 0
        if !valid { throw .invalidArgs("Invalid \(kind): \(value.debugDescription)") }
    }

    static func objectPath(_ value: String) throws(DBusError) { try check(value, kind: "object path", dbus_validate_path) }
    public static func interface(_ value: String) throws(DBusError) { try check(value, kind: "interface name", dbus_validate_interface) }
    public static func member(_ value: String) throws(DBusError) { try check(value, kind: "member name", dbus_validate_member) }
    static func errorName(_ value: String) throws(DBusError) { try check(value, kind: "error name", dbus_validate_error_name) }
    static func busName(_ value: String) throws(DBusError) { try check(value, kind: "bus name", dbus_validate_bus_name) }

    static func isObjectPath(_ value: String) -> Bool { (try? objectPath(value)) != nil }

    /// Strings on the wire are NUL-free UTF-8; Swift strings are valid UTF-8 but may hold NUL.
    static func string(_ value: String) throws(DBusError) {
        if value.containsNUL { throw .invalidArgs("D-Bus strings cannot contain NUL characters") }
    }
}

extension String {
    /// A NUL anywhere, found with memchr: every string of every message is checked, and the
    /// generic `utf8.contains(0)` showed in profiles of the daemon.
    var containsNUL: Bool {
        let found = utf8.withContiguousStorageIfAvailable { bytes in
            bytes.baseAddress.map { memchr($0, 0, bytes.count) != nil } ?? false
        }
        return found ?? utf8.contains(0)
    }
}
