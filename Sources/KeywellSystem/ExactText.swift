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
    @inlinable public func isExactly(_ other: String) -> Bool { utf8.elementsEqual(other.utf8) }

    /// Begins with `prefix`'s bytes.
    @inlinable public func startsExactly(with prefix: String) -> Bool { utf8.starts(with: prefix.utf8) }
}
