#if canImport(Glibc)
import Glibc
#endif

/// A text libdbus keeps inside a received message (its path, its interface), read in place.
/// Every call names both, and either is usually longer than the 15 bytes a `String` holds
/// without an allocation: they are compared with the registry's paths and the interface
/// tables byte for byte, and a `String` is made only when none of those is the same
/// (docs/performance.md, "The D-Bus layer's strings and objects per call").
struct MessageText {
    /// The text's bytes, without its NUL; valid while the message lives.
    let bytes: UnsafeRawBufferPointer

    init(_ text: UnsafePointer<CChar>) {
        bytes = UnsafeRawBufferPointer(start: text, count: strlen(text))
    }

    /// A new `String` of the same bytes (libdbus checked them: valid UTF-8).
    var string: String { String(decoding: bytes, as: UTF8.self) }

    /// Byte for byte (names and paths are ASCII on the wire, so this is `==` for them).
    func isExactly(_ string: String) -> Bool {
        let utf8 = string.utf8
        guard utf8.count == bytes.count else { return false }
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return true }
        return utf8.withContiguousStorageIfAvailable { memcmp($0.baseAddress!, base, bytes.count) == 0 }
            ?? utf8.elementsEqual(bytes)
    }

    /// `ObjectPathNamespace.path(_:isIn:)` for a path read in place.
    func isIn(namespace: String) -> Bool {
        let root = namespace.utf8
        if root.count == 1, root.first == UInt8(ascii: "/") { return true }
        guard !root.isEmpty, bytes.count >= root.count, let base = bytes.baseAddress else { return false }
        let inPlace: Bool? = root.withContiguousStorageIfAvailable { memcmp($0.baseAddress!, base, root.count) == 0 }
        guard inPlace ?? bytes.prefix(root.count).elementsEqual(root) else { return false }
        return (bytes.count == root.count || bytes[root.count] == UInt8(ascii: "/"))
    }
}
