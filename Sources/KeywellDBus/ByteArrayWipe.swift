import CDBus
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// Wipes byte arrays (`ay`) once a call is done with them (`SecretMemory.wipe`). Secrets and passwords travel as `ay`,
/// and freed memory is not cleared: without this, a secret stays readable in the daemon's heap
/// (and may reach swap) long after its keychain was locked. The strings (`s`) of a method whose
/// strings carry secrets (KWallet's passwords) are wiped too. Everything else is left alone.
enum ByteArrayWipe {
    /// Zeroes every `ay` in a message's body, in libdbus's own buffer. Only for messages nobody
    /// reads any more: a received call once handled, a reply once written out. Calls and replies
    /// are held as libdbus's pointers, so that is what it takes.
    /// `strings`: its strings (`s`, in variants and containers too) are zeroed as well, for a
    /// method whose strings carry secrets (`DBusMethod.secretStrings`, docs/dbus-layer.md,
    /// "Secrets in messages"); every other message keeps the fast path below.
    static func wipe(message: OpaquePointer, strings: Bool = false) {
        if strings {
            var iter = DBusMessageIter()
            guard dbus_message_iter_init(message, &iter) != 0 else { return }
            wipeSequence(&iter, depth: 0, strings: true)
            return
        }
        // An `ay` shows in the signature, or hides in a variant (`a{sv}` with `v_Data`). Read in
        // libdbus's own text: making a Swift string of it cost every call and reply an allocation.
        guard let signature = dbus_message_get_signature(message), mayHoldBytes(signature) else { return }
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return }
        wipeSequence(&iter, depth: 0, strings: false)
    }

    /// `ay` or `v` in a signature (a byte scan: Foundation's `contains` is a costly string search).
    private static func mayHoldBytes(_ signature: UnsafePointer<CChar>) -> Bool {
        var previous: UInt8 = 0
        var cursor = signature
        while true {
            let code = UInt8(bitPattern: cursor.pointee)
            if code == 0 { return false }
            if code == UInt8(ascii: "v") || (previous == UInt8(ascii: "a") && code == UInt8(ascii: "y")) { return true }
            previous = code
            cursor += 1
        }
    }

    /// Whether a body of this signature can hold an `ay`, the same test as for a message's.
    static func mayHoldBytes(_ signature: DBusSignature) -> Bool {
        var previous: UInt8 = 0
        for code in signature.rawValue.utf8 {
            if code == UInt8(ascii: "v") || (previous == UInt8(ascii: "a") && code == UInt8(ascii: "y")) { return true }
            previous = code
        }
        return false
    }

    /// Zeroes the storage of every `.bytes` inside `values` (all owners of that storage see zeros).
    static func wipe(_ values: [DBusValue]) {
        for value in values { wipe(value, depth: 0) }
    }

    private static func wipe(_ value: DBusValue, depth: Int) {
        guard depth < maximumContainerDepth else { return }
        switch value {
        case .bytes(let bytes):
            SecretMemory.wipe(bytes)
        case .array(_, let elements), .structure(let elements):
            for element in elements { wipe(element, depth: depth + 1) }
        case .dictionary(_, _, let entries):
            for entry in entries { wipe(entry.value, depth: depth + 1) }
        case .variant(let inner):
            wipe(inner, depth: depth + 1)
        default:
            break
        }
    }

    private static func wipeSequence(_ iter: inout DBusMessageIter, depth: Int, strings: Bool) {
        guard depth < maximumContainerDepth else { return }
        repeat {
            let type = dbus_message_iter_get_arg_type(&iter)
            guard type != TypeCode.invalid else { return }
            if strings, type == TypeCode.string {
                // A pointer into the body: its `strlen` bytes go, the length before it and the NUL
                // after it stay, so the walk (and any later one) still reads the message's layout.
                var cString: UnsafePointer<CChar>? = nil
                dbus_message_iter_get_basic(&iter, &cString)
                if let cString { SecretMemory.wipe(UnsafeMutableRawPointer(mutating: cString), count: strlen(cString)) }
            } else if type == TypeCode.array, dbus_message_iter_get_element_type(&iter) == TypeCode.byte {
                var elements = DBusMessageIter()
                dbus_message_iter_recurse(&iter, &elements)
                var base: UnsafeMutableRawPointer? = nil
                var count: Int32 = 0
                withUnsafeMutablePointer(to: &base) { dbus_message_iter_get_fixed_array(&elements, $0, &count) }
                if let base { SecretMemory.wipe(base, count: Int(count)) }
            } else if type == TypeCode.array || type == TypeCode.variant || type == TypeCode.structure || type == TypeCode.dictEntry {
                var inner = DBusMessageIter()
                dbus_message_iter_recurse(&iter, &inner)
                wipeSequence(&inner, depth: depth + 1, strings: strings)
            }
        } while dbus_message_iter_next(&iter) != 0
    }
}
