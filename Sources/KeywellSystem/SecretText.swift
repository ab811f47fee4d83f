/// Text that is a secret (a KWallet password), handled as UTF-8 bytes in `SecretBytes`: never
/// a Swift `String`, whose storage is freed without being wiped. Swift's own UTF-8 and UTF-16
/// codecs do the work, scalar by scalar, with no string in between. What it makes lives for one
/// call, so it comes from `SecretSlots` (`SecretBytes(transientCount:)`).
public enum SecretText {
    /// Whether `bytes` are well-formed UTF-8 (what D-Bus requires of a string).
    public static func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    /// `bytes` as well-formed UTF-8: a copy when they are already, else each ill-formed
    /// sequence replaced by U+FFFD as `String(decoding:as:)` does (a secret written through
    /// another face and read as a password keeps today's reading).
    public static func repairingUTF8(_ bytes: UnsafeRawBufferPointer) -> SecretBytes {
        if isValidUTF8(bytes) { return SecretBytes(transientCopying: bytes) }
        var count = 0
        forEachScalar(bytes) { scalar in count += UTF8.width(scalar) }
        let repaired = SecretBytes(transientCount: count)
        repaired.withUnsafeMutableBytes { target in
            var index = 0
            forEachScalar(bytes) { scalar in
                UTF8.encode(scalar) { unit in
                    target[index] = unit
                    index += 1
                }
            }
        }
        return repaired
    }

    private static func forEachScalar(_ bytes: UnsafeRawBufferPointer, _ body: (Unicode.Scalar) -> Void) {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): body(scalar)
            case .emptyInput: return
            case .error: body("\u{FFFD}")
            }
        }
    }

    /// The UTF-16 code units of well-formed UTF-8 `bytes` (invalid sequences as U+FFFD), handed
    /// to `body` one by one.
    public static func forEachUTF16Unit(_ bytes: UnsafeRawBufferPointer, _ body: (UInt16) -> Void) {
        forEachScalar(bytes) { scalar in UTF16.encode(scalar) { body($0) } }
    }

    /// How many UTF-16 code units `bytes` make (as `forEachUTF16Unit` hands them out).
    public static func utf16Count(_ bytes: UnsafeRawBufferPointer) -> Int {
        var count = 0
        forEachScalar(bytes) { scalar in count += UTF16.width(scalar) }
        return count
    }

    /// UTF-16 code units as UTF-8 in locked memory; nil when they hold a lone surrogate (which
    /// no string has). `unit(i)` gives the `i`th of `count` units.
    public static func fromUTF16(count: Int, _ unit: (Int) -> UInt16) -> SecretBytes? {
        var width = 0
        guard forEachUTF16Scalar(count: count, unit, { width += UTF8.width($0) }) else { return nil }
        let text = SecretBytes(transientCount: width)
        text.withUnsafeMutableBytes { target in
            var index = 0
            _ = forEachUTF16Scalar(count: count, unit) { scalar in
                UTF8.encode(scalar) { byte in
                    target[index] = byte
                    index += 1
                }
            }
        }
        return text
    }

    private static func forEachUTF16Scalar(count: Int, _ unit: (Int) -> UInt16, _ body: (Unicode.Scalar) -> Void) -> Bool {
        var iterator = (0..<count).lazy.map(unit).makeIterator()
        var decoder = UTF16()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): body(scalar)
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
