import Foundation
import KeywellCore
import KeywellProtocol

/// What the merge asks of an item a record carries (the type itself is KeywellCore's, which
/// reads and writes it).
extension SyncItem {
    public var identity: ItemIdentity { ItemIdentity(itemClass: itemClass, attributes: attributes) }

    /// Its `pdmn`, read as a stored item's is.
    public var accessibility: Accessibility {
        guard case .text(let text)? = attributes[.accessibility] else { return .default }
        return Accessibility.stored(text)
    }

    /// Everything but the modification time: equal content makes no conflict worth keeping.
    public func sameContent(as other: SyncItem) -> Bool {
        var mine = attributes, theirs = other.attributes
        mine[.modificationDate] = nil
        theirs[.modificationDate] = nil
        return itemClass == other.itemClass && mine == theirs && freeform == other.freeform && access == other.access
            && secret == other.secret
    }
}

/// Which item a change is about: its class and primary key, the values that make it unique in
/// a keychain. The folder never shows it: records hold it sealed, and the merge keys on
/// `ItemTag`, its keyed hash.
public struct ItemIdentity: Hashable, Sendable {
    public var itemClass: ItemClass
    /// The primary key's values, in `ItemClass.primaryKey` order (a missing one as "" or 0).
    public var key: [AttributeValue]

    public init(itemClass: ItemClass, key: [AttributeValue]) {
        self.itemClass = itemClass
        self.key = key
    }

    public init(itemClass: ItemClass, attributes: [ItemAttribute: AttributeValue]) {
        self.itemClass = itemClass
        key = itemClass.primaryKey.map { attributes[$0] ?? $0.missingKeyValue }
    }

    /// The bytes the tag hashes: text in NFC, as the keychain's unique indexes compare it.
    var canonicalBytes: [UInt8] {
        var writer = ByteWriter()
        writer.text(itemClass.rawValue)
        writer.number(UInt64(key.count), width: 2)
        for value in key {
            switch value {
            case .text(let text): writer.byte(UInt8(ascii: "t")); writer.text(text.precomposedStringWithCanonicalMapping)
            case .integer(let number): writer.byte(UInt8(ascii: "i")); writer.number(UInt64(bitPattern: number), width: 8)
            case .bool(let flag): writer.byte(UInt8(ascii: "b")); writer.byte(flag ? 1 : 0)
            case .data(let bytes): writer.byte(UInt8(ascii: "d")); writer.blob(Array(bytes))
            }
        }
        return writer.bytes
    }
}

/// The keyed hash of an item's identity under the sync key: equal on every machine that holds
/// the key, meaningless to anyone else.
public struct ItemTag: Hashable, Sendable, CustomStringConvertible {
    public static let byteCount = 32
    public let bytes: Data

    public init?(bytes: Data) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    public var description: String { MachineID(bytes: Array(bytes.prefix(16)))!.hex }
}

extension ItemIdentity {
    /// What `sync_item.identity` keeps: the canonical bytes, read back for a deletion.
    public var stored: Data { Data(canonicalBytes) }

    public init?(stored: Data) {
        var reader = ByteReader(Array(stored))
        do throws(SyncRefusal) {
            guard let itemClass = ItemClass(rawValue: try reader.text(limit: 16)) else { return nil }
            var key: [AttributeValue] = []
            for _ in 0..<(try reader.number(width: 2)) {
                switch try reader.byte() {
                case UInt8(ascii: "t"): key.append(.text(try reader.text(limit: ServiceLimits.bytesPerAttributeValue)))
                case UInt8(ascii: "i"): key.append(.integer(Int64(bitPattern: try reader.number(width: 8))))
                case UInt8(ascii: "b"): key.append(.bool(try reader.byte() != 0))
                case UInt8(ascii: "d"): key.append(.data(Data(try reader.blob(limit: ServiceLimits.bytesPerAttributeValue))))
                default: return nil
                }
            }
            try reader.finish()
            guard key.count == itemClass.primaryKey.count else { return nil }
            self.init(itemClass: itemClass, key: key)
        } catch {
            return nil
        }
    }
}
