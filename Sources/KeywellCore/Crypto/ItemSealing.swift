import Foundation
import KeywellProtocol

/// Seals item secrets under the keychain's master key. The associated data binds each sealed
/// secret to its keychain, its item and the item's identity, so a secret altered on disk, copied
/// to another row or left behind by a changed primary key fails to open (`errSecDecode`).
enum ItemSealing {
    static func associatedData(keychain: UUID, item: KeychainItem) -> Data {
        var data = AssociatedData(keychain: keychain, item: item.uuid, itemClass: item.itemClass)
        for attribute in item.itemClass.primaryKey {
            switch item.keyValue(attribute) {
            case .text(var text): text.withUTF8 { data.appendBytes(attribute, UnsafeRawBufferPointer($0)) }
            case .integer(let number): data.appendInteger(attribute, number)
            case .bool(let flag): data.appendBool(attribute, flag)
            case .data(let bytes): bytes.withUnsafeBytes { data.appendBytes(attribute, $0) }
            }
        }
        return data.finished
    }

    static func seal(_ secret: Data, for item: KeychainItem, keychain: UUID, key: SecretBytes) -> Data {
        Sodium.seal(secret, key: key, associatedData: associatedData(keychain: keychain, item: item))
    }

    static func open(_ item: KeychainItem, keychain: UUID, key: SecretBytes) throws(KeychainError) -> Data {
        try Sodium.open(item.sealedSecret, key: key, associatedData: associatedData(keychain: keychain, item: item))
    }
}

/// What a sealed secret is bound to: a domain, the keychain, the item, its class, then each
/// primary-key attribute (name, then length and bytes, or a big-endian number), in the class's
/// key order. Built in a byte array and copied once: appending to Data piece by piece cost more
/// than the decryption it guards. GetSecrets fills one straight from a row's columns.
struct AssociatedData {
    private static let domain = Array("keywell item secret v1\0".utf8)
    private var bytes: [UInt8] = []

    init(keychain: UUID, item: UUID, itemClass: ItemClass) {
        bytes.reserveCapacity(160)
        bytes += Self.domain
        withUnsafeBytes(of: keychain.uuid) { bytes += $0 }
        withUnsafeBytes(of: item.uuid) { bytes += $0 }
        bytes += itemClass.rawValue.utf8
    }

    /// Text or data, by its bytes (a missing text key part is empty).
    mutating func appendBytes(_ attribute: ItemAttribute, _ value: UnsafeRawBufferPointer) {
        bytes += attribute.name.utf8
        appendBigEndian(UInt64(value.count))
        bytes += value
    }

    mutating func appendInteger(_ attribute: ItemAttribute, _ number: Int64) {
        bytes += attribute.name.utf8
        appendBigEndian(UInt64(bitPattern: number))
    }

    mutating func appendBool(_ attribute: ItemAttribute, _ flag: Bool) {
        bytes += attribute.name.utf8
        bytes.append(flag ? 1 : 0)
    }

    var finished: Data { Data(bytes) }

    private mutating func appendBigEndian(_ number: UInt64) {
        withUnsafeBytes(of: number.bigEndian) { bytes += $0 }
    }
}
