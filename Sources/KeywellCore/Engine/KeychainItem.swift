import Foundation
import KeywellProtocol

/// One stored item: a stable UUID, its class, the attributes it has (as given) and its secret,
/// sealed. Every face works on these records: the Secret Service's items are the same rows.
struct KeychainItem: Sendable {
    /// The database row, once stored.
    var rowID: Int64?
    let uuid: UUID
    let itemClass: ItemClass
    /// The attributes the item has. `agrp`, `pdmn`, `cdat` and `mdat` are always present.
    var attributes: [ItemAttribute: AttributeValue]
    /// nonce ‖ ciphertext ‖ tag (see `ItemSealing`).
    var sealedSecret: Data

    static let defaultAccessGroup = ""
    static let defaultAccessibility = Accessibility.default.rawValue

    /// Its `pdmn`; a value stored before values were checked counts as the default.
    var accessibility: Accessibility {
        guard case .text(let text) = attributes[.accessibility] else { return .default }
        return Accessibility.stored(text)
    }

    /// A primary-key part: the attribute, or "" / 0 when the item lacks it.
    func keyValue(_ attribute: ItemAttribute) -> AttributeValue {
        attributes[attribute] ?? attribute.missingKeyValue
    }

    /// `class` plus every attribute the item has, under their wire keys.
    var wireAttributes: WireDictionary {
        var result: WireDictionary = [WireKey.class: .string(itemClass.rawValue)]
        for (attribute, value) in attributes {
            result[attribute.name] = value.wireValue
        }
        return result
    }
}

extension UUID {
    /// A version 7 UUID: 48 bits of milliseconds, then random bits. Items made one after another
    /// get neighbouring ids, so the UUID index grows at its end instead of everywhere at once.
    static func timeOrdered(at date: Date) -> UUID {
        var bytes = Array(Sodium.randomData(count: 16))
        let milliseconds = UInt64(max(0, millisecondsSince1970(date)))
        for index in 0..<6 {
            bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (40 - 8 * UInt64(index)))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x70
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(data: Data(bytes))!
    }

    var data: Data { withUnsafeBytes(of: uuid) { Data($0) } }

    /// The 32 lowercase hex digits of the UUID, without dashes (an item's D-Bus path segment and
    /// its free-form item access group, `FreeformItem.accessGroup(for:)`). By hand: `uuidString` and Foundation's string replacing
    /// cost tens of microseconds, a measurable share of a CreateItem.
    public var compactHex: String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            writeCompactHex(to: buffer)
            return 32
        }
    }

    /// Writes `compactHex` into the first 32 bytes of `buffer`.
    public func writeCompactHex(to buffer: UnsafeMutableBufferPointer<UInt8>) {
        withUnsafeBytes(of: uuid) { bytes in
            for (index, byte) in bytes.enumerated() {
                buffer[2 * index] = lowercaseHexDigits[Int(byte >> 4)]
                buffer[2 * index + 1] = lowercaseHexDigits[Int(byte & 0x0f)]
            }
        }
    }

    init?(data: Data) {
        guard data.count == 16 else { return nil }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { $0.copyBytes(from: data) }
        self.init(uuid: bytes)
    }
}

private let lowercaseHexDigits = Array("0123456789abcdef".utf8)

/// Milliseconds since 1970, the unit of `cdat` and `mdat`.
func millisecondsSince1970(_ date: Date) -> Int64 {
    Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
}
