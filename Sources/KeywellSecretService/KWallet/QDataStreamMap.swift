import KeywellProtocol
import KeywellSystem

/// A KWallet map entry on the wire: Qt's QDataStream serialisation of `QMap<QString, QString>`
/// (docs/kwallet.md, "Maps"), byte for byte.
///
/// The stream is a big-endian `quint32` count, then each key and value as a QString: a
/// big-endian `quint32` byte length and that many bytes of UTF-16BE, or `0xFFFFFFFF` for a null
/// string (read as empty). Qt 5 writes a map from its greatest key down, Qt 6 from its least
/// up; keys order as QString orders them, by UTF-16 code unit. A key that comes twice keeps its
/// last value, as Qt's reader does.
enum QDataStreamMap {
    /// The order pairs are written in: the Qt of the clients of each bus name (KF5: Qt 5).
    enum Order: Sendable {
        case qt5Descending
        case qt6Ascending
    }

    enum Failure: Error, Equatable, CustomStringConvertible {
        case truncated
        case trailingBytes(Int)
        case oddStringLength(UInt32)
        case invalidUTF16
        case tooManyPairs(UInt32)
        case tooLarge(Int)

        var description: String {
            switch self {
            case .truncated: "the QDataStream value ends early"
            case .trailingBytes(let count): "the QDataStream value has \(count) byte(s) after its end"
            case .oddStringLength(let length): "a QString has an odd byte length (\(length))"
            case .invalidUTF16: "a QString is not valid UTF-16"
            case .tooManyPairs(let count): "the map has \(count) pairs; at most \(KWalletLimits.mapEntries) are kept"
            case .tooLarge(let bytes): "the value is \(bytes) bytes; at most \(KWalletLimits.entryBytes) are kept"
            }
        }
    }

    private static let nullString: UInt32 = 0xFFFF_FFFF

    static func decode(_ bytes: [UInt8]) throws(Failure) -> [String: String] {
        guard bytes.count <= KWalletLimits.entryBytes else { throw .tooLarge(bytes.count) }
        var reader = Reader(bytes: bytes)
        let count = try reader.uint32()
        guard count <= KWalletLimits.mapEntries else { throw .tooManyPairs(count) }
        var map: [String: String] = [:]
        for _ in 0..<count {
            let key = try reader.string()
            map[key] = try reader.string()
        }
        guard reader.remaining == 0 else { throw .trailingBytes(reader.remaining) }
        return map
    }

    static func encode(_ map: [String: String], order: Order) -> [UInt8] {
        let keys = map.keys.sorted { Array($0.utf16).lexicographicallyPrecedes(Array($1.utf16)) }
        var bytes: [UInt8] = []
        append(UInt32(map.count), to: &bytes)
        for key in order == .qt5Descending ? keys.reversed() : keys {
            append(key, to: &bytes)
            append(map[key] ?? "", to: &bytes)
        }
        return bytes
    }

    /// One QString alone (how kwalletd keeps a password entry's value).
    static func encodeString(_ string: String) -> [UInt8] {
        var bytes: [UInt8] = []
        append(string, to: &bytes)
        return bytes
    }

    /// A password as a QString: its UTF-16 from its UTF-8 in locked memory, no `String` on the
    /// way; the array is sized once (a regrowth leaves a copy behind) and is the reply's `ay`,
    /// wiped once the reply is out.
    static func encodeString(secret text: SecretBytes) -> [UInt8] {
        text.withUnsafeBytes { utf8 in
            let units = SecretText.utf16Count(utf8)
            var bytes: [UInt8] = []
            bytes.reserveCapacity(4 + units * 2)
            append(UInt32(units * 2), to: &bytes)
            SecretText.forEachUTF16Unit(utf8) { unit in
                bytes.append(UInt8(unit >> 8))
                bytes.append(UInt8(truncatingIfNeeded: unit))
            }
            return bytes
        }
    }

    /// A QString read as a password: its UTF-8 straight into locked memory (the reverse of
    /// `encodeString(secret:)`); refused as `decodeString` refuses.
    static func decodeSecretString(_ bytes: [UInt8]) throws(Failure) -> SecretBytes {
        try decodeWhole(bytes) { (reader) throws(Failure) in try reader.secretString() }
    }

    static func decodeString(_ bytes: [UInt8]) throws(Failure) -> String {
        try decodeWhole(bytes) { (reader) throws(Failure) in try reader.string() }
    }

    /// One QString that must be all of `bytes`, read by `read`.
    private static func decodeWhole<Value>(_ bytes: [UInt8], _ read: (inout Reader) throws(Failure) -> Value) throws(Failure) -> Value {
        guard bytes.count <= KWalletLimits.entryBytes else { throw .tooLarge(bytes.count) }
        var reader = Reader(bytes: bytes)
        let value = try read(&reader)
        guard reader.remaining == 0 else { throw .trailingBytes(reader.remaining) }
        return value
    }

    private static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8),
                  UInt8(truncatingIfNeeded: value)]
    }

    private static func append(_ string: String, to bytes: inout [UInt8]) {
        let units = Array(string.utf16)
        append(UInt32(units.count * 2), to: &bytes)
        for unit in units { bytes += [UInt8(unit >> 8), UInt8(truncatingIfNeeded: unit)] }
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0
        var remaining: Int { bytes.count - offset }

        mutating func uint32() throws(Failure) -> UInt32 {
            guard remaining >= 4 else { throw .truncated }
            defer { offset += 4 }
            return bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }

        mutating func secretString() throws(Failure) -> SecretBytes {
            let length = try uint32()
            if length == QDataStreamMap.nullString { return SecretBytes(transientCount: 0) }
            guard length % 2 == 0 else { throw .oddStringLength(length) }
            guard Int(length) <= remaining else { throw .truncated }
            let start = offset
            offset += Int(length)
            let bytes = self.bytes
            // Lone surrogates have no string: refused rather than replaced, as `string()` does.
            let text = SecretText.fromUTF16(count: Int(length) / 2) { index in
                UInt16(bytes[start + 2 * index]) << 8 | UInt16(bytes[start + 2 * index + 1])
            }
            guard let text else { throw .invalidUTF16 }
            return text
        }

        mutating func string() throws(Failure) -> String {
            let length = try uint32()
            if length == QDataStreamMap.nullString { return "" }
            guard length % 2 == 0 else { throw .oddStringLength(length) }
            guard Int(length) <= remaining else { throw .truncated }
            var units: [UInt16] = []
            units.reserveCapacity(Int(length) / 2)
            var index = offset
            offset += Int(length)
            while index < offset {
                units.append(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]))
                index += 2
            }
            // Lone surrogates have no String: refused rather than replaced.
            var scalars = String.UnicodeScalarView()
            var iterator = units.makeIterator()
            var decoder = UTF16()
            while true {
                switch decoder.decode(&iterator) {
                case .scalarValue(let scalar): scalars.append(scalar)
                case .emptyInput: return String(scalars)
                case .error: throw .invalidUTF16
                }
            }
        }
    }
}
