import Foundation

/// Big-endian numbers and length-prefixed fields, the layout of everything sealed in a sync folder.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    mutating func number(_ value: UInt64, width: Int) {
        for index in (0..<width).reversed() { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }

    mutating func raw(_ value: some Sequence<UInt8>) { bytes += value }

    mutating func text(_ value: String) { blob(Array(value.utf8)) }

    mutating func blob(_ value: [UInt8]) {
        number(UInt64(value.count), width: 4)
        bytes += value
    }

    mutating func blob(_ value: UnsafeRawBufferPointer) {
        number(UInt64(value.count), width: 4)
        bytes += value
    }
}

/// Reads fields; a field running past the end is a refusal, never a crash.
struct ByteReader {
    private let data: [UInt8]
    private(set) var offset = 0

    init(_ data: [UInt8]) { self.data = data }

    var isAtEnd: Bool { offset == data.count }

    mutating func raw(_ count: Int) throws(SyncRefusal) -> ArraySlice<UInt8> {
        guard count >= 0, data.count - offset >= count else { throw SyncRefusal("its contents are cut short") }
        defer { offset += count }
        return data[offset..<offset + count]
    }

    mutating func byte() throws(SyncRefusal) -> UInt8 { try raw(1).first! }

    mutating func number(width: Int) throws(SyncRefusal) -> UInt64 {
        try raw(width).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A length-prefixed field of at most `limit` bytes.
    mutating func blob(limit: Int) throws(SyncRefusal) -> ArraySlice<UInt8> {
        let count = try number(width: 4)
        guard count <= UInt64(limit) else { throw SyncRefusal("a field is longer than \(limit) bytes") }
        return try raw(Int(count))
    }

    mutating func text(limit: Int) throws(SyncRefusal) -> String {
        guard let text = String(validating: try blob(limit: limit), as: UTF8.self) else {
            throw SyncRefusal("a text field is not UTF-8")
        }
        return text
    }

    func finish() throws(SyncRefusal) {
        guard isAtEnd else { throw SyncRefusal("it has bytes after its fields") }
    }
}

/// Why a file of the folder is not merged: logged with the file's name and counted in
/// `sync status`; the rest of the folder still merges.
public struct SyncRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { reason }
}
