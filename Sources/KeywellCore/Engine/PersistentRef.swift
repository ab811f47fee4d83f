import Foundation
import KeywellProtocol

/// `v_PersistentRef` bytes: a magic prefix, the keychain's UUID and the item's UUID. Both UUIDs
/// are stored in the file, so a reference stays valid across restarts and renames.
struct PersistentRef: Equatable, Sendable {
    private static let magic = Data("KWPR\u{1}".utf8)
    private static let length = magic.count + 32

    let keychain: UUID
    let item: UUID

    init(keychain: UUID, item: UUID) {
        self.keychain = keychain
        self.item = item
    }

    /// Bytes that are not a Keywell reference are `errSecParam`.
    init(parsing data: Data) throws(KeychainError) {
        let bytes = Data(data)
        guard bytes.count == Self.length, bytes.prefix(Self.magic.count) == Self.magic,
            let keychain = UUID(data: bytes.subdata(in: Self.magic.count..<Self.magic.count + 16)),
            let item = UUID(data: bytes.subdata(in: Self.magic.count + 16..<Self.length))
        else {
            throw .param("v_PersistentRef is not a Keywell persistent reference")
        }
        self.init(keychain: keychain, item: item)
    }

    var data: Data { Self.magic + keychain.data + item.data }
}
