import Foundation
import KeywellProtocol

/// One item as an export file holds it: every native attribute, every free-form row (Secret
/// Service attributes and the hidden content-type and type rows) and the secret in the clear
/// (the file encrypts it). `keychain` is the name of the keychain it came from.
struct ExportedItem {
    var keychain: String
    var itemClass: ItemClass
    var uuid: UUID
    var attributes: [ItemAttribute: AttributeValue]
    var freeform: [String: String]
    var secret: Data

    var modified: Int64 {
        if case .integer(let milliseconds)? = attributes[.modificationDate] { return milliseconds }
        return 0
    }

    /// Its `pdmn`, read as a stored item's is (an odd value counts as the default).
    var accessibility: Accessibility {
        guard case .text(let text)? = attributes[.accessibility] else { return .default }
        return Accessibility.stored(text)
    }
}

/// The records inside an export file (docs/export-import.md, "File format"): a kind byte, then
/// length-prefixed fields. `keychain` records name the keychain of the items after them; the
/// final `end` record holds the number of items, checked on import.
enum ExportRecord {
    static let keychainKind: UInt8 = 1
    static let itemKind: UInt8 = 2
    static let endKind: UInt8 = 3

    static func keychain(_ name: String) -> [UInt8] {
        var writer = LengthPrefixedWriter(bytes: [keychainKind])
        writer.text(name)
        return writer.bytes
    }

    static func end(itemCount: Int) -> [UInt8] {
        var writer = LengthPrefixedWriter(bytes: [endKind])
        writer.number(UInt64(itemCount), width: 8)
        return writer.bytes
    }

    /// The caller wipes the bytes once sealed: they hold the secret.
    static func item(_ item: ExportedItem) -> [UInt8] {
        var writer = LengthPrefixedWriter(bytes: [itemKind])
        writer.text(item.itemClass.rawValue)
        writer.raw(Array(item.uuid.data))
        let attributes = item.attributes.sorted { $0.key.rawValue < $1.key.rawValue }
        writer.number(UInt64(attributes.count), width: 2)
        for (attribute, value) in attributes {
            writer.text(attribute.name)
            switch value {
            case .text(let text): writer.raw([UInt8(ascii: "t")]); writer.text(text)
            case .integer(let number): writer.raw([UInt8(ascii: "i")]); writer.number(UInt64(bitPattern: number), width: 8)
            case .bool(let flag): writer.raw([UInt8(ascii: "b"), flag ? 1 : 0])
            case .data(let bytes): writer.raw([UInt8(ascii: "d")]); writer.blob(Array(bytes))
            }
        }
        let rows = item.freeform.sorted { $0.key < $1.key }
        writer.number(UInt64(rows.count), width: 2)
        for (name, value) in rows {
            writer.text(name)
            writer.text(value)
        }
        item.secret.withUnsafeBytes { writer.blob($0) }
        return writer.bytes
    }

    enum Decoded {
        case keychain(String)
        case item(ExportedItem)
        case end(itemCount: Int)
    }

    /// `keychain` is the name the last keychain record gave (items need one before them).
    static func decode(_ record: Data, keychain: String?) throws(KeychainError) -> Decoded {
        var reader = FieldReader(record)
        switch try reader.byte() {
        case keychainKind:
            let name = try reader.text()
            guard !name.isEmpty else { throw malformed("a keychain record has no name") }
            try reader.finish()
            return .keychain(name)
        case endKind:
            let count = try reader.number(width: 8)
            try reader.finish()
            return .end(itemCount: Int(clamping: count))
        case itemKind:
            guard let keychain else { throw malformed("an item comes before any keychain") }
            guard let itemClass = ItemClass(rawValue: try reader.text()) else { throw malformed("an item has an unknown class") }
            guard let uuid = UUID(data: Data(try reader.raw(16))) else { throw malformed("an item has no id") }
            var attributes: [ItemAttribute: AttributeValue] = [:]
            for _ in 0..<(try reader.number(width: 2)) {
                let name = try reader.text()
                guard let attribute = ItemAttribute.byName[name], attribute.belongs(to: itemClass) else {
                    throw malformed("an item has an attribute \(name.debugDescription) its class lacks")
                }
                let value: AttributeValue
                switch try reader.byte() {
                case UInt8(ascii: "t"): value = .text(try reader.text())
                case UInt8(ascii: "i"): value = .integer(Int64(bitPattern: try reader.number(width: 8)))
                case UInt8(ascii: "b"): value = .bool(try reader.byte() != 0)
                case UInt8(ascii: "d"): value = .data(Data(try reader.blob()))
                default: throw malformed("an attribute has an unknown type")
                }
                guard matches(value, attribute.kind) else { throw malformed("attribute \(name) has the wrong type") }
                // The same checks as an Add's (four-character codes, port range).
                do {
                    attributes[attribute] = try attribute.parse(value.wireValue)
                } catch {
                    throw malformed(error.detail ?? "attribute \(name) is invalid")
                }
            }
            var freeform: [String: String] = [:]
            let rowCount = try reader.number(width: 2)
            guard rowCount <= UInt64(ServiceLimits.attributesPerItem + FreeformItem.hiddenRows.count) else {
                throw malformed("an item has more than \(ServiceLimits.attributesPerItem) attributes")
            }
            for _ in 0..<rowCount {
                let name = try reader.text()
                freeform[name] = try reader.text()
            }
            let secret = try reader.secretBlob()
            try reader.finish()
            return .item(ExportedItem(keychain: keychain, itemClass: itemClass, uuid: uuid, attributes: attributes,
                                      freeform: freeform, secret: secret))
        default:
            throw malformed("a record has an unknown kind")
        }
    }

    private static func matches(_ value: AttributeValue, _ kind: AttributeKind) -> Bool {
        switch (value, kind) {
        case (.text, .text), (.text, .fourCharCode), (.integer, .integer), (.integer, .date), (.bool, .bool), (.data, .data): true
        default: false
        }
    }

    static func malformed(_ why: String) -> KeychainError {
        KeychainError(SecStatus.decode, detail: "the export file's contents are malformed: \(why)")
    }
}

/// Reads fields; any field running past the record's end is a malformed file, never a crash.
private struct FieldReader {
    private let data: Data
    private var offset: Int

    init(_ data: Data) {
        self.data = data
        offset = data.startIndex
    }

    mutating func raw(_ count: Int) throws(KeychainError) -> [UInt8] {
        guard count >= 0, data.endIndex - offset >= count else { throw ExportRecord.malformed("a record is cut short") }
        defer { offset += count }
        return Array(data[offset..<offset + count])
    }

    mutating func byte() throws(KeychainError) -> UInt8 { try raw(1)[0] }

    mutating func number(width: Int) throws(KeychainError) -> UInt64 {
        try raw(width).reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func blob() throws(KeychainError) -> [UInt8] { try raw(Int(try number(width: 4))) }

    mutating func text() throws(KeychainError) -> String {
        let bytes = try blob()
        guard let text = String(validating: bytes, as: UTF8.self) else { throw ExportRecord.malformed("a text field is not UTF-8") }
        return text
    }

    /// The secret, copied straight into storage wiped on release.
    mutating func secretBlob() throws(KeychainError) -> Data {
        let count = Int(try number(width: 4))
        guard data.endIndex - offset >= count else { throw ExportRecord.malformed("a record is cut short") }
        defer { offset += count }
        return data[offset..<offset + count].withUnsafeBytes { SecretWipe.wipingData(copying: $0) }
    }

    func finish() throws(KeychainError) {
        guard offset == data.endIndex else { throw ExportRecord.malformed("a record has bytes after its fields") }
    }
}
