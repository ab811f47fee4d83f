import Foundation
import KeywellProtocol

/// Seals item secrets under the keychain's master key. The associated data binds each sealed
/// secret to its keychain, its item and the item's identity, so a secret altered on disk, copied
/// to another row or left behind by a changed primary key fails to open (`errSecDecode`).
enum ItemSealing {
    private static let domain = Data("keywell item secret v1\0".utf8)

    static func associatedData(keychain: UUID, item: KeychainItem) -> Data {
        var data = domain
        data.append(keychain.data)
        data.append(item.uuid.data)
        data.append(contentsOf: item.itemClass.rawValue.utf8)
        for attribute in item.itemClass.primaryKey {
            data.append(contentsOf: attribute.name.utf8)
            switch item.keyValue(attribute) {
            case .text(let text): appendLengthPrefixed(Data(text.utf8), to: &data)
            case .integer(let number): appendBigEndian(UInt64(bitPattern: number), to: &data)
            case .bool(let flag): data.append(flag ? 1 : 0)
            case .data(let bytes): appendLengthPrefixed(bytes, to: &data)
            }
        }
        return data
    }

    static func seal(_ secret: Data, for item: KeychainItem, keychain: UUID, key: SecretBytes) -> Data {
        Sodium.seal(secret, key: key, associatedData: associatedData(keychain: keychain, item: item))
    }

    static func open(_ item: KeychainItem, keychain: UUID, key: SecretBytes) throws(KeychainError) -> Data {
        try Sodium.open(item.sealedSecret, key: key, associatedData: associatedData(keychain: keychain, item: item))
    }

    private static func appendLengthPrefixed(_ bytes: Data, to data: inout Data) {
        appendBigEndian(UInt64(bytes.count), to: &data)
        data.append(bytes)
    }

    private static func appendBigEndian(_ number: UInt64, to data: inout Data) {
        withUnsafeBytes(of: number.bigEndian) { data.append(contentsOf: $0) }
    }
}
