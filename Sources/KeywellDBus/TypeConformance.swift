extension DBusValue {
    /// True when this value's type is exactly `signature`, one complete type, found by walking the
    /// signature's bytes: building `signature` for every element of a large reply (a string per
    /// struct) was a large part of encoding it. A container's own elements are checked against
    /// its declared element type when they are written.
    func hasType(_ signature: DBusSignature) -> Bool {
        let matched = signature.rawValue.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            var index = 0
            return matches(bytes, at: &index) && index == bytes.count
        }
        return matched ?? (self.signature == signature)
    }

    /// Consumes this value's type from `signature` at `index`; false when it is not there.
    private func matches(_ signature: UnsafeBufferPointer<UInt8>, at index: inout Int) -> Bool {
        guard index < signature.count else { return false }
        switch self {
        case .bytes:
            return consume("ay", signature, at: &index)
        case .array(let element, _):
            return consume("a", signature, at: &index) && consume(element.rawValue, signature, at: &index)
        case .dictionary(let key, let value, _):
            return consume("a{", signature, at: &index) && consume(key.rawValue, signature, at: &index)
                && consume(value.rawValue, signature, at: &index) && consume("}", signature, at: &index)
        case .structure(let fields):
            guard consume("(", signature, at: &index) else { return false }
            for field in fields where !field.matches(signature, at: &index) { return false }
            return consume(")", signature, at: &index)
        default:
            // A basic type or a variant: one letter.
            guard signature[index] == basicTypeCode else { return false }
            index += 1
            return true
        }
    }

    /// The one-letter code of a basic type or a variant (0 for the other containers).
    private var basicTypeCode: UInt8 {
        switch self {
        case .byte: UInt8(ascii: "y")
        case .bool: UInt8(ascii: "b")
        case .int16: UInt8(ascii: "n")
        case .uint16: UInt8(ascii: "q")
        case .int32: UInt8(ascii: "i")
        case .uint32: UInt8(ascii: "u")
        case .int64: UInt8(ascii: "x")
        case .uint64: UInt8(ascii: "t")
        case .double: UInt8(ascii: "d")
        case .string, .secretString: UInt8(ascii: "s")
        case .objectPath: UInt8(ascii: "o")
        case .signature: UInt8(ascii: "g")
        case .unixFD: UInt8(ascii: "h")
        case .variant: UInt8(ascii: "v")
        case .bytes, .array, .dictionary, .structure: 0
        }
    }
}

/// Consumes `expected` from `signature` at `index` when it is there.
private func consume(_ expected: String, _ signature: UnsafeBufferPointer<UInt8>, at index: inout Int) -> Bool {
    var position = index
    for byte in expected.utf8 {
        guard position < signature.count, signature[position] == byte else { return false }
        position += 1
    }
    index = position
    return true
}
