import Foundation
import KeywellProtocol

/// The keychain's identity and its master key, wrapped under a key derived from the password.
/// The wrapped key's associated data covers the format version, identity and key-derivation
/// fields, so none of them can be swapped; `settingsMAC` (format 2 on) covers every field,
/// the lock settings included, under the keychain's `IntegrityKey` (docs/file-format.md).
struct KeychainHeader: Sendable {
    /// 2: items and the header carry integrity MACs. 3: items carry access lists, the header
    /// `enforceAccess`. Older files are upgraded when the master key is first at hand
    /// (`KeychainUpgrade`).
    static let currentFormatVersion = 3
    static let firstVersionWithMACs = 2
    static let firstVersionWithAccessLists = 3
    private static let domain = Data("keywell master key v1\0".utf8)

    let formatVersion: Int
    let uuid: UUID
    let kdf: KDFParameters
    let salt: Data
    let wrapNonce: Data
    /// The master key sealed with XChaCha20-Poly1305: ciphertext ‖ tag.
    let wrappedKey: Data
    var settings: KeychainSettings
    /// The header's MAC (`settingsMACInput`); nil in files of format 1.
    var settingsMAC: Data?

    /// A header for a new keychain: `masterKey` wrapped under `password`.
    static func make(
        uuid: UUID, masterKey: SecretBytes, password: SecretBytes, kdf: KDFParameters, settings: KeychainSettings
    ) throws(KeychainError) -> KeychainHeader {
        let salt = Sodium.randomData(count: Sodium.saltLength)
        let wrappingKey = try Sodium.deriveKey(password: password, salt: salt, parameters: kdf)
        return wrapping(masterKey, under: wrappingKey, uuid: uuid, kdf: kdf, salt: salt, settings: settings)
    }

    /// `masterKey` wrapped in the current format under an existing wrapping key, with a fresh
    /// nonce and the header's MAC.
    static func wrapping(
        _ masterKey: SecretBytes, under wrappingKey: SecretBytes, uuid: UUID, kdf: KDFParameters, salt: Data,
        settings: KeychainSettings
    ) -> KeychainHeader {
        let associatedData = wrapAssociatedData(formatVersion: currentFormatVersion, uuid: uuid, kdf: kdf, salt: salt)
        let sealed = masterKey.withUnsafeBytes {
            Sodium.seal($0, key: wrappingKey, associatedData: associatedData)
        }
        var header = KeychainHeader(
            formatVersion: currentFormatVersion, uuid: uuid, kdf: kdf, salt: salt,
            wrapNonce: sealed.prefix(Sodium.nonceLength), wrappedKey: sealed.dropFirst(Sodium.nonceLength),
            settings: settings)
        header.settingsMAC = header.computedMAC(IntegrityKey(masterKey: masterKey))
        return header
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
        try unwrapKeys(password: password).masterKey
    }

    /// The master key and the key derived from the password that wraps it (an upgrade wraps the
    /// master key again under it, without a second slow derivation).
    func unwrapKeys(password: SecretBytes) throws(KeychainError) -> (masterKey: SecretBytes, wrappingKey: SecretBytes) {
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
        return (masterKey, wrappingKey)
    }

    /// The same keychain and master key, wrapped under a new password with fresh salt.
    func rewrapped(masterKey: SecretBytes, password: SecretBytes, kdf: KDFParameters) throws(KeychainError) -> KeychainHeader {
        try Self.make(uuid: uuid, masterKey: masterKey, password: password, kdf: kdf, settings: settings)
    }

    /// The same header with new settings and their MAC.
    func withSettings(_ settings: KeychainSettings, key: IntegrityKey) -> KeychainHeader {
        var header = self
        header.settings = settings
        header.settingsMAC = header.computedMAC(key)
        return header
    }

    /// `errSecDecode` unless `settingsMAC` covers this header as read (always, for format 1:
    /// such a file has no MAC until its upgrade).
    func checkMAC(_ key: IntegrityKey, path: String) throws(KeychainError) {
        guard formatVersion >= Self.firstVersionWithMACs else { return }
        guard key.verifies(macInput, settingsMAC) else {
            throw KeychainError(
                SecStatus.decode,
                detail: "the header of \(path) fails its integrity check: its lock settings were changed outside Keywell")
        }
    }

    private func computedMAC(_ key: IntegrityKey) -> Data { key.mac(macInput) }

    /// Every field of the header, the lock settings included.
    private var macInput: MACInput {
        var input = MACInput(domain: "keywell keychain header v1", keychain: uuid)
        for number in [formatVersion, kdf.opsLimit, kdf.memLimit] { input.appendInteger(Int64(number)) }
        for field in [salt, wrapNonce, wrappedKey] { field.withUnsafeBytes { input.appendBlob($0) } }
        input.appendInteger(settings.lockOnSleep ? 1 : 0)
        input.appendInteger(Int64(settings.lockAfterSeconds))
        if formatVersion >= Self.firstVersionWithAccessLists {
            input.appendInteger(settings.enforceAccess ? 1 : 0)
            input.appendInteger(settings.lockOnScreenLock ? 1 : 0)
        } else if settings.lockOnScreenLock {
            // Format 2 got this setting after it shipped: appended only when on, so the MACs of
            // files where it is off still verify. Format 3 always covers both fields.
            input.appendInteger(1)
        }
        return input
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
