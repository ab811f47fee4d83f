#if canImport(Glibc)
import Glibc
#endif

/// Text compared and hashed byte for byte, as the kernel compares file names and SQLite compares
/// TEXT. Swift's `String` equality follows Unicode canonical equivalence: "café" spelt with a
/// precomposed é equals "café" spelt with a combining accent, yet to the kernel those are two
/// files, and two programs. Key a table with this wherever the bytes name something: a file, a
/// program, an access list's text.
public struct ExactText: Hashable, Sendable, CustomStringConvertible {
    public let text: String

    public init(_ text: String) { self.text = text }

    public static func == (left: ExactText, right: ExactText) -> Bool { left.text.isExactly(right.text) }

    public func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public var description: String { text }
}

extension String {
    /// The same bytes (not merely canonically equivalent text: see `ExactText`).
    /// Native strings are compared as two byte buffers, by `memcmp`: the generic walk over two
    /// `UTF8View`s went through their protocol witnesses byte by byte, and one over two buffers
    /// still a byte at a time (docs/performance.md, "Reads with fewer steps").
    public func isExactly(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        let inPlace = utf8.withContiguousStorageIfAvailable { mine in
            other.utf8.withContiguousStorageIfAvailable { theirs in UnsafeBufferPointer.sameBytes(mine, theirs) }
        }
        if let inPlace, let inPlace { return inPlace }
        return utf8.elementsEqual(other.utf8)
    }

    /// Begins with `prefix`'s bytes.
    @inlinable public func startsExactly(with prefix: String) -> Bool { utf8.starts(with: prefix.utf8) }
}

extension UnsafeBufferPointer where Element == UInt8 {
    /// The same bytes: one storage (a text kept once and handed out) without reading them,
    /// else `memcmp`.
    public static func sameBytes(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Bool {
        guard left.count == right.count else { return false }
        guard left.count > 0, let leftBase = left.baseAddress, let rightBase = right.baseAddress else { return true }
        return leftBase == rightBase || memcmp(leftBase, rightBase, left.count) == 0
    }
}
