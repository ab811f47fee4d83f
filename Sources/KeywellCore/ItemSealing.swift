import Foundation
import KeywellProtocol

/// Seals item secrets under the keychain's master key. The associated data binds each sealed
/// secret to its keychain, its item and the item's identity, so a secret altered on disk, copied
/// to another row or left behind by a changed primary key fails to open (`errSecDecode`).
enum ItemSealing {
    private static let domain = Array("keywell item secret v1\0".utf8)

    /// Built in a byte array and copied once: appending to Data piece by piece cost more than the
    /// decryption it guards (GetSecrets opens a thousand secrets in one call).
    static func associatedData(keychain: UUID, item: KeychainItem) -> Data {
        var data: [UInt8] = []
        data.reserveCapacity(160)
        data += domain
        withUnsafeBytes(of: keychain.uuid) { data += $0 }
        withUnsafeBytes(of: item.uuid.uuid) { data += $0 }
        data += item.itemClass.rawValue.utf8
        for attribute in item.itemClass.primaryKey {
            data += attribute.name.utf8
            switch item.keyValue(attribute) {
            case .text(let text):
                appendBigEndian(UInt64(text.utf8.count), to: &data)
                data += text.utf8
            case .integer(let number): appendBigEndian(UInt64(bitPattern: number), to: &data)
            case .bool(let flag): data.append(flag ? 1 : 0)
            case .data(let bytes):
                appendBigEndian(UInt64(bytes.count), to: &data)
                data += bytes
            }
        }
        return Data(data)
    }

    static func seal(_ secret: Data, for item: KeychainItem, keychain: UUID, key: SecretBytes) -> Data {
        Sodium.seal(secret, key: key, associatedData: associatedData(keychain: keychain, item: item))
    }

    static func open(_ item: KeychainItem, keychain: UUID, key: SecretBytes) throws(KeychainError) -> Data {
        try Sodium.open(item.sealedSecret, key: key, associatedData: associatedData(keychain: keychain, item: item))
    }

    private static func appendBigEndian(_ number: UInt64, to data: inout [UInt8]) {
        withUnsafeBytes(of: number.bigEndian) { data += $0 }
    }
}
