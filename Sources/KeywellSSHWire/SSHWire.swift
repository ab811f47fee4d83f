/// Why bytes are not a well-formed agent message.
public struct AgentParseError: Error, Sendable, Equatable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
}

/// Reads the SSH wire encoding (RFC 4251 §5): uint32, string, mpint, byte, boolean. Every read
/// is bounded by what is left, so a length field can never reach past the message. It reads
/// bytes in place, so a private key is never copied out of its locked memory: valid only
/// inside the `withUnsafeBytes` that gave it its buffer.
public struct SSHWireReader {
    public let buffer: UnsafeRawBufferPointer
    public private(set) var offset: Int

    public init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
        self.offset = 0
    }

    public var isAtEnd: Bool { offset == buffer.count }
    public var remaining: Int { buffer.count - offset }

    public mutating func byte() throws(AgentParseError) -> UInt8 {
        guard offset < buffer.count else { throw AgentParseError("the message ends early") }
        defer { offset += 1 }
        return buffer[offset]
    }

    public mutating func bool() throws(AgentParseError) -> Bool { try byte() != 0 }

    public mutating func uint32() throws(AgentParseError) -> UInt32 {
        guard remaining >= 4 else { throw AgentParseError("the message ends early") }
        defer { offset += 4 }
        return UInt32(buffer[offset]) << 24 | UInt32(buffer[offset + 1]) << 16 | UInt32(buffer[offset + 2]) << 8
            | UInt32(buffer[offset + 3])
    }

    /// The next string's contents, in place, consumed.
    public mutating func stringBytes() throws(AgentParseError) -> UnsafeRawBufferPointer {
        let length = Int(try uint32())
        guard length <= remaining else { throw AgentParseError("a field is longer than the message") }
        defer { offset += length }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + length)])
    }

    /// The next string, copied: only for public values.
    public mutating func string() throws(AgentParseError) -> [UInt8] { Array(try stringBytes()) }

    public mutating func text(maximum: Int) throws(AgentParseError) -> String {
        let bytes = try stringBytes()
        guard bytes.count <= maximum else { throw AgentParseError("a text field is longer than \(maximum) bytes") }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw AgentParseError("a text field is not UTF-8") }
        return text
    }

    /// An mpint, in place, checked to be a non-negative, minimally encoded integer: its
    /// big-endian magnitude without the sign byte.
    public mutating func positiveMPInt() throws(AgentParseError) -> UnsafeRawBufferPointer {
        let bytes = try stringBytes()
        guard let first = bytes.first else { return bytes }
        guard first & 0x80 == 0 else { throw AgentParseError("a negative integer") }
        guard first == 0 else { return bytes }
        guard bytes.count > 1, bytes[1] & 0x80 != 0 else { throw AgentParseError("an integer with a needless zero") }
        return UnsafeRawBufferPointer(rebasing: bytes[1...])
    }

    public func expectEnd() throws(AgentParseError) {
        guard isAtEnd else { throw AgentParseError("\(remaining) unexpected bytes after the message") }
    }
}

/// Writes the SSH wire encoding.
public struct SSHWireWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public mutating func byte(_ value: UInt8) { bytes.append(value) }

    public mutating func uint32(_ value: UInt32) {
        bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    public mutating func string(_ value: some Collection<UInt8>) {
        uint32(UInt32(value.count))
        bytes += value
    }

    public mutating func text(_ value: String) { string(Array(value.utf8)) }

    /// Bytes already in the encoding, as they are.
    public mutating func bytes(_ raw: some Collection<UInt8>) { bytes += raw }

    /// A non-negative integer from big-endian magnitude bytes: leading zeros dropped, one zero
    /// added when the top bit is set.
    public mutating func mpint(magnitude: some Collection<UInt8>) {
        let trimmed = magnitude.drop { $0 == 0 }
        if let first = trimmed.first, first & 0x80 != 0 {
            uint32(UInt32(trimmed.count + 1))
            bytes.append(0)
            bytes += trimmed
        } else {
            string(Array(trimmed))
        }
    }
}
