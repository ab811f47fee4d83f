import Foundation
import KeywellCore

/// Fields are written as export records write theirs (KeywellCore's LengthPrefixedWriter).
typealias ByteWriter = LengthPrefixedWriter

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
