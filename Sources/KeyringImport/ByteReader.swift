import Foundation

/// Reads gnome-keyring's big-endian fields from a buffer, never past its end: every length is
/// checked against the bytes left before anything is allocated for it.
struct ByteReader {
    private let bytes: UnsafeRawBufferPointer
    private(set) var offset: Int
    /// Names the file and the part being read in errors.
    let keyring: String

    init(_ bytes: UnsafeRawBufferPointer, at offset: Int = 0, keyring: String) {
        self.bytes = bytes
        self.offset = offset
        self.keyring = keyring
    }

    var remaining: Int { bytes.count - offset }

    func corrupt(_ reason: String) -> KeyringReadError { .corrupt(keyring: keyring, reason: reason) }

    mutating func byte(_ what: String) throws(KeyringReadError) -> UInt8 {
        guard remaining >= 1 else { throw corrupt("truncated in \(what)") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint32(_ what: String) throws(KeyringReadError) -> UInt32 {
        guard remaining >= 4 else { throw corrupt("truncated in \(what)") }
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// A time: two big-endian 32-bit halves.
    mutating func time(_ what: String) throws(KeyringReadError) -> Int64 {
        let high = try uint32(what)
        let low = try uint32(what)
        return Int64(bitPattern: UInt64(high) << 32 | UInt64(low))
    }

    mutating func raw(_ count: Int, _ what: String) throws(KeyringReadError) -> UnsafeRawBufferPointer {
        guard count >= 0, remaining >= count else { throw corrupt("truncated in \(what)") }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    /// A length-prefixed byte run; 0xffffffff is NULL (nil).
    mutating func byteArray(_ what: String) throws(KeyringReadError) -> UnsafeRawBufferPointer? {
        let length = try uint32(what)
        if length == 0xffff_ffff { return nil }
        guard Int(length) <= remaining else { throw corrupt("\(what) is longer than the file") }
        return try raw(Int(length), what)
    }

    /// A length-prefixed UTF-8 string; NULL is nil. gnome-keyring stops a string at a NUL.
    mutating func string(_ what: String) throws(KeyringReadError) -> String? {
        guard let run = try byteArray(what) else { return nil }
        let text = run.prefix { $0 != 0 }
        guard let string = String(validating: text, as: UTF8.self) else { throw corrupt("\(what) is not UTF-8") }
        return string
    }
}

/// Writes gnome-keyring's big-endian fields.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    mutating func uint32(_ value: UInt32) {
        bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    mutating func time(_ value: Int64) {
        let bits = UInt64(bitPattern: value)
        uint32(UInt32(bits >> 32))
        uint32(UInt32(bits & 0xffff_ffff))
    }

    mutating func string(_ value: String?) {
        guard let value else { return uint32(0xffff_ffff) }
        let utf8 = Array(value.utf8)
        uint32(UInt32(utf8.count))
        bytes += utf8
    }

    mutating func raw(_ value: UnsafeRawBufferPointer) {
        uint32(UInt32(value.count))
        bytes += value
    }
}
