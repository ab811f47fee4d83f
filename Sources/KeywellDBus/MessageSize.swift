import CDBus

#if canImport(Glibc)
import Glibc
#endif

/// A cheap upper bound on the bytes of a message's arguments, without decoding them: array byte
/// lengths come from the array header, strings from their length. Used to keep large calls (a
/// million-element array) off the I/O thread whatever their object prefers.
enum MessageSize {
    /// Calls up to this size may run on the I/O thread; decoding them takes microseconds.
    static let inlineLimit = 16 * 1024

    static func isSmall(_ message: OpaquePointer, limit: Int = inlineLimit) -> Bool {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return true }
        var total = 0
        repeat {
            total += bytes(&iter, depth: 0)
            if total > limit { return false }
        } while dbus_message_iter_next(&iter) != 0
        return true
    }

    private static func bytes(_ iter: inout DBusMessageIter, depth: Int) -> Int {
        switch dbus_message_iter_get_arg_type(&iter) {
        case TypeCode.array:
            // libdbus answers from inside the array: its length field, in bytes.
            var elements = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &elements)
            return Int(keywell_iter_array_byte_length(&elements))
        case TypeCode.string, TypeCode.objectPath, TypeCode.signature:
            var cString: UnsafePointer<CChar>? = nil
            dbus_message_iter_get_basic(&iter, &cString)
            return cString.map { strlen($0) } ?? 0
        case TypeCode.variant, TypeCode.structure, TypeCode.dictEntry:
            // Deep nesting is itself a reason to decode elsewhere.
            guard depth < 8 else { return Int.max / 2 }
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &inner)
            var total = 0
            while dbus_message_iter_get_arg_type(&inner) != TypeCode.invalid {
                total += bytes(&inner, depth: depth + 1)
                dbus_message_iter_next(&inner)
            }
            return total
        default:
            return 8
        }
    }
}
