import Foundation
import KeywellCore
import KeywellProtocol

/// KWallet's wallet file, `NAME.kwl` (docs/migration.md, "KWallet's wallet file"). A Blowfish
/// wallet has `NAME.salt` beside it:
///
///     "KWALLET\n\r\0\r\n", version bytes 0 1, cipher 3 (Blowfish, CBC), hash 2 (PBKDF2-SHA512),
///     folder count, per folder: MD5 of its name, entry count, MD5 of each key (readable
///     without the password; not needed here),
///     then the encrypted rest: one random block, the data's size (32-bit big-endian), the data,
///     random padding to whole blocks with the data's check (KWallet's SHA-1) in its last 20 bytes.
///
/// The data is a QDataStream: per folder its name and entry count, per entry its key, type
/// (1 password, 2 bytes, 3 map) and value. Entries become items as keywelld's KWallet API keeps
/// them (docs/kwallet.md, "One item, four faces").
///
/// A GPG wallet is the magic, version bytes 0 0|1, cipher 2, hash 0, then an OpenPGP message
/// (decrypted by `KWalletGPG`) whose plaintext is a QDataStream: the key's ID (QString), the hash
/// table as a QByteArray, and the data above as a QByteArray.
public enum KWalletFile {
    static let magic: [UInt8] = Array("KWALLET\n\r\0\r\n".utf8)
    static let supportedVersion: [UInt8] = [0, 1, 3, 2]
    /// Cipher and hash bytes of a GPG wallet (its minor version is 0 or 1).
    static let gpgCipherAndHash: [UInt8] = [2, 0]

    public enum Cipher: Sendable, Equatable {
        case blowfish
        case gpg
    }
    static let sha1Size = 20
    /// KWallet itself refuses more folders than this.
    static let maximumFolders = 0xffff

    public static func matches(_ bytes: [UInt8]) -> Bool {
        bytes.count >= magic.count && Array(bytes[0..<magic.count]) == magic
    }

    /// `modified`: the file's modified time, given to every item (the format keeps no times).
    public static func read(_ bytes: [UInt8], salt: [UInt8], keyring: String, password: SecretBytes,
                            modified: Int64) throws(KeyringReadError) -> KeyringContents {
        guard bytes.count <= KeyringLimits.maximumFileSize else {
            throw .tooLarge(keyring: keyring, reason: "the file is over \(KeyringLimits.maximumFileSize) bytes")
        }
        guard matches(bytes) else { throw .unrecognized(keyring: keyring) }
        guard !salt.isEmpty, salt.count <= KeyringLimits.maximumSaltSize else {
            throw .corrupt(keyring: keyring, reason: "its .salt file is empty or over \(KeyringLimits.maximumSaltSize) bytes")
        }
        // A damaged file is named before the key derivation's cost is paid.
        guard try checkStructure(bytes, keyring: keyring) == .blowfish else {
            throw .corrupt(keyring: keyring, reason: "it is a GPG wallet, opened with gpg rather than a password")
        }
        return try read(bytes, key: KWalletBlowfish.key(password: password, salt: salt), keyring: keyring, modified: modified)
    }

    /// `read` with the key already derived (the fuzz target seals its input under one key).
    static func read(_ bytes: [UInt8], key: SecretBytes, keyring: String, modified: Int64) throws(KeyringReadError) -> KeyringContents {
        guard bytes.count <= KeyringLimits.maximumFileSize else {
            throw .tooLarge(keyring: keyring, reason: "the file is over \(KeyringLimits.maximumFileSize) bytes")
        }
        guard matches(bytes) else { throw .unrecognized(keyring: keyring) }
        let decrypted = bytes.withUnsafeBytes { buffer in
            Result { () throws(KeyringReadError) in try decrypt(buffer, key: key, keyring: keyring) }
        }
        let plaintext = try decrypted.get()
        let read = plaintext.withUnsafeBytes { plain in
            Result { () throws(KeyringReadError) in try checkedEntries(plain, keyring: keyring, modified: modified) }
        }
        let items = try read.get()
        return KeyringContents(format: .kwallet, label: keyring, created: modified, modified: modified, items: items)
    }

    /// Checks what is readable without the password (magic, version, the hash table, whole
    /// blocks), so a damaged file is named before anyone is asked for a password.
    /// For a GPG wallet: the magic, the version and an OpenPGP packet after it.
    @discardableResult
    public static func checkStructure(_ bytes: [UInt8], keyring: String) throws(KeyringReadError) -> Cipher {
        guard bytes.count <= KeyringLimits.maximumFileSize else {
            throw .tooLarge(keyring: keyring, reason: "the file is over \(KeyringLimits.maximumFileSize) bytes")
        }
        guard matches(bytes) else { throw .unrecognized(keyring: keyring) }
        let checked = bytes.withUnsafeBytes { buffer in
            Result { () throws(KeyringReadError) -> Cipher in
                if isGPG(buffer) {
                    _ = try gpgMessage(buffer, keyring: keyring)
                    return .gpg
                }
                _ = try encryptedPart(buffer, keyring: keyring)
                return .blowfish
            }
        }
        return try checked.get()
    }

    private static func isGPG(_ buffer: UnsafeRawBufferPointer) -> Bool {
        buffer.count >= magic.count + 4 && buffer[magic.count] == 0 && buffer[magic.count + 1] <= 1
            && Array(buffer[(magic.count + 2)..<(magic.count + 4)]) == gpgCipherAndHash
    }

    /// A GPG wallet's OpenPGP message: everything after the version bytes. Its first byte must
    /// be an OpenPGP packet tag (high bit set), so that gpg is never handed something else.
    static func gpgMessage(_ buffer: UnsafeRawBufferPointer, keyring: String) throws(KeyringReadError) -> UnsafeRawBufferPointer {
        var reader = ByteReader(buffer, at: magic.count + 4, keyring: keyring)
        let message = try reader.raw(reader.remaining, "the OpenPGP message")
        guard let first = message.first, first & 0x80 != 0 else {
            throw reader.corrupt("what follows the GPG wallet's header is not an OpenPGP message")
        }
        return message
    }

    /// A GPG wallet: `decrypt` turns its OpenPGP message into the plaintext (in wiped memory),
    /// which is read as KWallet's GpgPersistHandler writes it.
    public static func readGPG(_ bytes: [UInt8], keyring: String, modified: Int64,
                               decrypt: (UnsafeRawBufferPointer) throws(KeyringReadError) -> SecretBytes)
        throws(KeyringReadError) -> KeyringContents {
        guard try checkStructure(bytes, keyring: keyring) == .gpg else {
            throw .corrupt(keyring: keyring, reason: "not a GPG wallet")
        }
        let decrypted = bytes.withUnsafeBytes { buffer in
            Result { () throws(KeyringReadError) in try decrypt(try gpgMessage(buffer, keyring: keyring)) }
        }
        let plaintext = try decrypted.get()
        let read = plaintext.withUnsafeBytes { plain in
            Result { () throws(KeyringReadError) in try gpgEntries(plain, keyring: keyring, modified: modified) }
        }
        return KeyringContents(format: .kwallet, label: keyring, created: modified, modified: modified, items: try read.get())
    }

    /// A GPG wallet's plaintext: the key's ID and the hash table (both unneeded here), then the
    /// folders and entries as a Blowfish wallet holds them.
    static func gpgEntries(_ plain: UnsafeRawBufferPointer, keyring: String, modified: Int64) throws(KeyringReadError) -> [KeyringItem] {
        var reader = ByteReader(plain, keyring: keyring)
        _ = try QDataStreamValue.string(&reader, "the GPG key's ID")
        _ = try reader.byteArray("the folder and key hashes")
        let values = try reader.byteArray("the folders") ?? UnsafeRawBufferPointer(start: nil, count: 0)
        guard reader.remaining == 0 else { throw reader.corrupt("\(reader.remaining) bytes after the folders") }
        return try entries(ByteReader(values, keyring: keyring), modified: modified)
    }

    /// The encrypted part, after the version and the hash table.
    private static func encryptedPart(_ buffer: UnsafeRawBufferPointer, keyring: String) throws(KeyringReadError) -> UnsafeRawBufferPointer {
        var reader = ByteReader(buffer, at: magic.count, keyring: keyring)
        let version = try Array(reader.raw(4, "the version"))
        guard version == supportedVersion else {
            throw reader.corrupt("version, cipher and hash \(version) are neither Blowfish with PBKDF2-SHA512 (0 1 3 2) nor GPG (0 0|1 2 0)")
        }
        try skipKeyHashes(&reader)
        let encrypted = try reader.raw(reader.remaining, "the encrypted data")
        guard encrypted.count % KWalletBlowfish.blockSize == 0, encrypted.count >= KWalletBlowfish.blockSize + 4 + sha1Size else {
            throw reader.corrupt("the encrypted data is not whole Blowfish blocks")
        }
        return encrypted
    }

    /// The encrypted part, decrypted (the random block, size, data, padding and SHA-1 still in it).
    private static func decrypt(_ buffer: UnsafeRawBufferPointer, key: SecretBytes, keyring: String) throws(KeyringReadError) -> SecretBytes {
        let encrypted = try encryptedPart(buffer, keyring: keyring)
        guard let plaintext = KWalletBlowfish.decrypt(encrypted, key: key) else {
            throw .corrupt(keyring: keyring, reason: "cannot decrypt with Blowfish (is OpenSSL's legacy provider installed?)")
        }
        return plaintext
    }

    /// The data, once its size and SHA-1 check out, as items.
    private static func checkedEntries(_ plain: UnsafeRawBufferPointer, keyring: String,
                                       modified: Int64) throws(KeyringReadError) -> [KeyringItem] {
        var reader = ByteReader(plain, at: KWalletBlowfish.blockSize, keyring: keyring)
        let size = Int(try reader.uint32("the data's size"))
        // A wrong key gives random bytes here as often as a damaged file does.
        guard size <= plain.count - KWalletBlowfish.blockSize - 4 - sha1Size else { throw .wrongPassword(keyring: keyring) }
        let data = try reader.raw(size, "the data")
        let check = KWalletBlowfish.littleEndianSHA1(data)
        guard KeyringCrypto.equal(check, UnsafeRawBufferPointer(rebasing: plain[(plain.count - sha1Size)...])) else {
            throw .wrongPassword(keyring: keyring)
        }
        return try entries(ByteReader(data, keyring: keyring), modified: modified)
    }

    /// The MD5 table of folder names and keys before the encrypted part.
    private static func skipKeyHashes(_ reader: inout ByteReader) throws(KeyringReadError) {
        let folders = try reader.uint32("the folder count")
        guard folders <= maximumFolders else { throw .tooLarge(keyring: reader.keyring, reason: "\(folders) folders") }
        for _ in 0..<folders {
            _ = try reader.raw(16, "a folder's hash")
            let keys = Int(try reader.uint32("a folder's entry count"))
            guard keys <= reader.remaining / 16 else { throw reader.corrupt("a folder's key hashes are longer than the file") }
            _ = try reader.raw(keys * 16, "a folder's key hashes")
        }
    }

    /// Folders and entries, last one winning for a repeated folder and key, as in KWallet.
    static func entries(_ stream: ByteReader, modified: Int64) throws(KeyringReadError) -> [KeyringItem] {
        var reader = stream
        var items: [String: KeyringItem] = [:]
        var order: [String] = []
        while reader.remaining > 0 {
            let folder = try QDataStreamValue.string(&reader, "a folder name") ?? ""
            let count = try reader.uint32("folder \(folder)'s entry count")
            guard count <= UInt32(KeyringLimits.maximumItems) else {
                throw .tooLarge(keyring: reader.keyring, reason: "\(count) entries in folder \(folder)")
            }
            for _ in 0..<count {
                let key = try QDataStreamValue.string(&reader, "an entry's key in folder \(folder)") ?? ""
                let type = try reader.uint32("entry \(folder)/\(key)'s type")
                let value = try reader.byteArray("entry \(folder)/\(key)'s value") ?? UnsafeRawBufferPointer(start: nil, count: 0)
                // Unknown types are left out, as KWallet leaves them out.
                guard let entry = try KWalletEntryValue(type: type, value: value, keyring: reader.keyring, name: "\(folder)/\(key)")
                else { continue }
                let identity = "\(folder.utf16.count):\(folder)/\(key)"
                if items[identity] == nil { order.append(identity) }
                guard order.count <= KeyringLimits.maximumItems else {
                    throw .tooLarge(keyring: reader.keyring, reason: "over \(KeyringLimits.maximumItems) entries")
                }
                items[identity] = KeyringItem(
                    identity: identity, label: "\(folder)/\(key)",
                    attributes: [
                        GnomeKeyringBinary.schemaAttribute: KWalletProtocol.schema, KWalletProtocol.folderAttribute: folder,
                        KWalletProtocol.keyAttribute: key, KWalletProtocol.typeAttribute: entry.typeAttribute,
                    ],
                    schema: nil, secret: entry.secret, created: modified, modified: modified)
            }
        }
        return order.compactMap { items[$0] }
    }
}
