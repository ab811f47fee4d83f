import Foundation
import KeywellProtocol

/// The keychain's identity and its master key, wrapped under a key derived from the password.
/// The wrapped key's associated data covers every other field, so none of them can be swapped.
struct KeychainHeader: Sendable {
    static let currentFormatVersion = 1
    private static let domain = Data("keywell master key v1\0".utf8)

    let formatVersion: Int
    let uuid: UUID
    let kdf: KDFParameters
    let salt: Data
    let wrapNonce: Data
    /// The master key sealed with XChaCha20-Poly1305: ciphertext ‖ tag.
    let wrappedKey: Data
    var settings: KeychainSettings

    /// A header for a new keychain: `masterKey` wrapped under `password`.
    static func make(
        uuid: UUID, masterKey: SecretBytes, password: SecretBytes, kdf: KDFParameters, settings: KeychainSettings
    ) throws(KeychainError) -> KeychainHeader {
        let salt = Sodium.randomData(count: Sodium.saltLength)
        let wrappingKey = try Sodium.deriveKey(password: password, salt: salt, parameters: kdf)
        let associatedData = wrapAssociatedData(formatVersion: currentFormatVersion, uuid: uuid, kdf: kdf, salt: salt)
        let sealed = masterKey.withUnsafeBytes {
            Sodium.seal($0, key: wrappingKey, associatedData: associatedData)
        }
        return KeychainHeader(
            formatVersion: currentFormatVersion, uuid: uuid, kdf: kdf, salt: salt,
            wrapNonce: sealed.prefix(Sodium.nonceLength), wrappedKey: sealed.dropFirst(Sodium.nonceLength),
            settings: settings)
    }

    init(
        formatVersion: Int, uuid: UUID, kdf: KDFParameters, salt: Data, wrapNonce: Data, wrappedKey: Data,
        settings: KeychainSettings
    ) {
        self.formatVersion = formatVersion
        self.uuid = uuid
        self.kdf = kdf
        self.salt = Data(salt)
        self.wrapNonce = Data(wrapNonce)
        self.wrappedKey = Data(wrappedKey)
        self.settings = settings
    }

    /// The master key, or `errSecAuthFailed` when the password is wrong.
    func unwrapMasterKey(password: SecretBytes) throws(KeychainError) -> SecretBytes {
        let wrappingKey = try Sodium.deriveKey(password: password, salt: salt, parameters: kdf)
        let sealed = wrapNonce + wrappedKey
        guard Sodium.openedLength(of: sealed) == Sodium.keyLength else {
            throw KeychainError(SecStatus.invalidKeychain, detail: "wrapped master key has the wrong length")
        }
        let masterKey = SecretBytes(count: Sodium.keyLength)
        let associatedData = Self.wrapAssociatedData(formatVersion: formatVersion, uuid: uuid, kdf: kdf, salt: salt)
        let opened = masterKey.withUnsafeMutableBytes {
            Sodium.open(sealed, key: wrappingKey, associatedData: associatedData, into: $0)
        }
        guard opened else { throw KeychainError(SecStatus.authFailed) }
        return masterKey
    }

    /// The same keychain and master key, wrapped under a new password with fresh salt.
    func rewrapped(masterKey: SecretBytes, password: SecretBytes, kdf: KDFParameters) throws(KeychainError) -> KeychainHeader {
        try Self.make(uuid: uuid, masterKey: masterKey, password: password, kdf: kdf, settings: settings)
    }

    private static func wrapAssociatedData(formatVersion: Int, uuid: UUID, kdf: KDFParameters, salt: Data) -> Data {
        var data = domain
        for number in [formatVersion, kdf.opsLimit, kdf.memLimit] {
            withUnsafeBytes(of: UInt64(number).bigEndian) { data.append(contentsOf: $0) }
        }
        data.append(uuid.data)
        data.append(salt)
        return data
    }
}
