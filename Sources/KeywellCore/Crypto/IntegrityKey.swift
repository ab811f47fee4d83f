import Foundation
import GRDB
import GRDBSQLite

/// The key of a keychain's integrity MACs (items' attributes, the header's lock settings): a
/// subkey of the master key, so it is known only while the keychain is unlocked and differs from
/// the key that seals secrets. See docs/file-format.md, "Integrity MACs".
struct IntegrityKey: Sendable {
    private let key: SecretBytes

    init(masterKey: SecretBytes) {
        key = Sodium.deriveSubkey(of: masterKey, id: 1, context: "kwintegr")
    }

    func mac(_ input: MACInput) -> Data {
        input.withBytes { Sodium.mac($0, key: key) }
    }

    /// Whether `stored` is the MAC of `input` (a missing MAC never is).
    func verifies(_ input: MACInput, _ stored: Data?) -> Bool {
        guard let stored else { return false }
        return Sodium.macsEqual(mac(input), stored)
    }
}

/// What a MAC covers, in an encoding where no two inputs give the same bytes: a domain that
/// names the structure, then fields each led by a type tag and, for text and blobs, a 64-bit
/// big-endian length. Built in one byte array and hashed once.
struct MACInput {
    private var bytes: [UInt8] = []

    private enum Tag {
        static let null: UInt8 = 0
        static let integer: UInt8 = 1
        static let real: UInt8 = 2
        static let text: UInt8 = 3
        static let blob: UInt8 = 4
    }

    init(domain: String, keychain: UUID) {
        bytes.reserveCapacity(512)
        bytes += domain.utf8
        bytes.append(0)
        withUnsafeBytes(of: keychain.uuid) { bytes += $0 }
    }

    mutating func appendInteger(_ number: Int64) {
        bytes.append(Tag.integer)
        appendBigEndian(UInt64(bitPattern: number))
    }

    mutating func appendBlob(_ value: UnsafeRawBufferPointer) {
        appendBytes(Tag.blob, value)
    }

    mutating func appendText<Bytes: Collection<UInt8>>(_ utf8: Bytes) {
        bytes.append(Tag.text)
        appendBigEndian(UInt64(utf8.count))
        bytes += utf8
    }

    /// A value as it is bound for storage.
    mutating func append(_ value: DatabaseValue) {
        switch value.storage {
        case .null: bytes.append(Tag.null)
        case .int64(let number): appendInteger(number)
        case .double(let number):
            bytes.append(Tag.real)
            appendBigEndian(number.bitPattern)
        case .string(let text): appendText(text.utf8)
        case .blob(let data): data.withUnsafeBytes { appendBlob($0) }
        }
    }

    /// A column as SQLite stored it: by its storage class, so any change of value or of type shows.
    mutating func appendColumn(_ row: RawStatement, _ column: Int32) {
        switch row.storageType(column) {
        case SQLITE_NULL: bytes.append(Tag.null)
        case SQLITE_INTEGER: appendInteger(row.integer(column))
        case SQLITE_FLOAT:
            bytes.append(Tag.real)
            appendBigEndian(row.real(column).bitPattern)
        case SQLITE_TEXT: row.withBytes(column) { appendBytes(Tag.text, $0) }
        default: row.withBytes(column) { appendBlob($0) }
        }
    }

    /// Free-form (name, value) rows, sorted by name's bytes (names are unique per item), led by
    /// their number.
    mutating func appendFreeform(_ rows: [(name: [UInt8], value: [UInt8])]) {
        appendInteger(Int64(rows.count))
        for row in rows.sorted(by: { $0.name.lexicographicallyPrecedes($1.name) }) {
            appendText(row.name)
            appendText(row.value)
        }
    }

    func withBytes<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T {
        bytes.withUnsafeBytes(body)
    }

    private mutating func appendBytes(_ tag: UInt8, _ value: UnsafeRawBufferPointer) {
        bytes.append(tag)
        appendBigEndian(UInt64(value.count))
        bytes += value
    }

    private mutating func appendBigEndian(_ number: UInt64) {
        withUnsafeBytes(of: number.bigEndian) { bytes += $0 }
    }
}
