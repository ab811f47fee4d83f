import Foundation
import KeywellCore

/// gnome-keyring's password-encrypted `.keyring` file (docs/migration.md, "gnome-keyring's
/// binary file"). Big-endian throughout:
///
///     "GnomeKeyring\n\r\0\n", version 0.0, crypto 0 (AES), hash 0 (MD5)
///     label, two times, flags, lock timeout, hash iterations, 8-byte salt, 4 reserved words
///     item count, then per item: id, type, attributes with their values hashed (MD5, in the clear)
///     size, then the encrypted block: MD5 of the rest, then per item: label, secret, created,
///     modified, reserved string and words, attributes in full, access list
///
/// Key and IV come from iterated SHA-256 over password and salt; the block is AES-128-CBC
/// without padding (zero-filled to 16 bytes). A wrong password shows as an MD5 mismatch.
public enum GnomeKeyringBinary {
    static let magic: [UInt8] = Array("GnomeKeyring\n\r".utf8) + [0, 0x0a]

    /// Whether `bytes` start like a gnome-keyring binary file of the version this reads.
    public static func matches(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 20 && Array(bytes[0..<16]) == magic && bytes[16] == 0 && bytes[17] == 0
    }

    public static func read(_ bytes: [UInt8], keyring: String, password: SecretBytes) throws(KeyringReadError) -> KeyringContents {
        guard bytes.count <= KeyringLimits.maximumFileSize else {
            throw .tooLarge(keyring: keyring, reason: "the file is over \(KeyringLimits.maximumFileSize) bytes")
        }
        let result = bytes.withUnsafeBytes { buffer -> Result<KeyringContents, KeyringReadError> in
            do throws(KeyringReadError) { return .success(try read(buffer, keyring: keyring, password: password)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private struct Hashed {
        let id: UInt32
        let type: UInt32
    }

    private static func read(_ buffer: UnsafeRawBufferPointer, keyring: String, password: SecretBytes) throws(KeyringReadError) -> KeyringContents {
        guard buffer.count >= 20, Array(buffer[0..<16]) == magic else { throw .unrecognized(keyring: keyring) }
        guard buffer[16] == 0, buffer[17] == 0, buffer[18] == 0, buffer[19] == 0 else { throw .unrecognized(keyring: keyring) }
        var reader = ByteReader(buffer, at: 20, keyring: keyring)
        let label = try reader.string("the keyring's label") ?? ""
        // gnome-keyring writes modified then created (and reads them the other way round).
        let modified = try reader.time("the keyring's times")
        let created = try reader.time("the keyring's times")
        _ = try reader.uint32("the flags")
        _ = try reader.uint32("the lock timeout")
        let iterations = try reader.uint32("the hash iterations")
        guard iterations >= 1 else { throw reader.corrupt("zero hash iterations") }
        guard iterations <= KeyringLimits.maximumHashIterations else {
            throw .tooLarge(keyring: keyring, reason: "\(iterations) hash iterations (at most \(KeyringLimits.maximumHashIterations))")
        }
        let salt = Array(try reader.raw(8, "the salt"))
        for _ in 0..<4 { _ = try reader.uint32("reserved words") }
        let count = try reader.uint32("the item count")
        // Each item takes at least 12 bytes here: a count the file cannot hold is a lie.
        guard Int(count) <= KeyringLimits.maximumItems else {
            throw .tooLarge(keyring: keyring, reason: "\(count) items (at most \(KeyringLimits.maximumItems))")
        }
        guard Int(count) * 12 <= reader.remaining else { throw reader.corrupt("the item count is larger than the file") }
        var hashed: [Hashed] = []
        hashed.reserveCapacity(Int(count))
        for _ in 0..<count {
            let id = try reader.uint32("an item id")
            let type = try reader.uint32("an item type")
            _ = try attributes(&reader, what: "hashed attributes")
            hashed.append(Hashed(id: id, type: type))
        }
        let size = try reader.uint32("the encrypted size")
        guard size % 16 == 0, size >= 16 else { throw reader.corrupt("the encrypted block is not whole AES blocks") }
        guard Int(size) <= reader.remaining else { throw reader.corrupt("the encrypted block is cut short") }
        let encrypted = try reader.raw(Int(size), "the encrypted block")

        let keyAndIV = KeyringCrypto.iteratedSHA256(password: password, salt: salt, iterations: iterations)
        let decrypted = keyAndIV.withUnsafeBytes { kv in
            KeyringCrypto.aes128CBC(encrypt: false, key: UnsafeRawBufferPointer(rebasing: kv[0..<16]),
                                    iv: UnsafeRawBufferPointer(rebasing: kv[16..<32]), encrypted)
        }
        guard let decrypted else { throw reader.corrupt("the encrypted block cannot be decrypted") }
        let items = try decrypted.withUnsafeBytes { (plain: UnsafeRawBufferPointer) throws(KeyringReadError) -> [KeyringItem] in
            let check = KeyringCrypto.md5(UnsafeRawBufferPointer(rebasing: plain[16...]))
            guard KeyringCrypto.equal(check, UnsafeRawBufferPointer(rebasing: plain[0..<16])) else {
                throw .wrongPassword(keyring: keyring)
            }
            var inner = ByteReader(plain, at: 16, keyring: keyring)
            var items: [KeyringItem] = []
            items.reserveCapacity(hashed.count)
            for entry in hashed {
                items.append(try fullItem(&inner, entry))
            }
            return items
        }
        return KeyringContents(format: .gnomeKeyring, label: label, created: created, modified: modified, items: items)
    }

    private static func fullItem(_ reader: inout ByteReader, _ entry: Hashed) throws(KeyringReadError) -> KeyringItem {
        let label = try reader.string("an item's label") ?? ""
        let secret = try reader.byteArray("an item's secret").map { SecretBytes(copying: $0) } ?? SecretBytes(count: 0)
        let created = try reader.time("an item's times")
        let modified = try reader.time("an item's times")
        _ = try reader.string("reserved text")
        for _ in 0..<4 { _ = try reader.uint32("reserved words") }
        let attributes = try attributes(&reader, what: "an item's attributes")
        let aclCount = try reader.uint32("the access list")
        guard Int(aclCount) * 16 <= reader.remaining else { throw reader.corrupt("the access list is larger than the file") }
        for _ in 0..<aclCount {
            _ = try reader.uint32("an access entry")
            _ = try reader.string("an access entry")
            _ = try reader.string("an access entry")
            _ = try reader.string("an access entry")
            _ = try reader.uint32("an access entry")
        }
        return KeyringItem(identity: "id:\(entry.id)", label: label, attributes: attributes,
                           schema: implicitSchema(attributes, itemType: entry.type), secret: secret, created: created, modified: modified)
    }

    /// A count, then name, type (0 string, 1 uint32) and value; uint32 values become decimal text,
    /// as gnome-keyring shows them through the Secret Service.
    private static func attributes(_ reader: inout ByteReader, what: String) throws(KeyringReadError) -> [String: String] {
        let count = try reader.uint32(what)
        guard count <= KeyringLimits.maximumAttributesPerItem else {
            throw .tooLarge(keyring: reader.keyring, reason: "\(count) attributes on one item (at most \(KeyringLimits.maximumAttributesPerItem))")
        }
        guard Int(count) * 12 <= reader.remaining else { throw reader.corrupt("\(what): the count is larger than the file") }
        var result: [String: String] = [:]
        for _ in 0..<count {
            guard let name = try reader.string(what) else { throw reader.corrupt("\(what): an attribute without a name") }
            switch try reader.uint32(what) {
            case 0: result[name] = try reader.string(what) ?? ""
            case 1: result[name] = String(try reader.uint32(what))
            default: throw reader.corrupt("\(what): an attribute of unknown type")
            }
        }
        return result
    }

    static let schemaAttribute = "xdg:schema"

    /// The schema of an item kept only as gnome-keyring's numeric type (items stored without
    /// `xdg:schema`: Generic). It becomes the item's type, not an attribute: gnome-keyring keeps it
    /// outside the attributes too, so a later store with the same attributes replaces the item.
    static func implicitSchema(_ attributes: [String: String], itemType: UInt32) -> String? {
        attributes[schemaAttribute] == nil ? schema(forItemType: itemType) : nil
    }

    /// gnome-keyring's old numeric item types and the schema names it gives them.
    static let itemTypes: [(UInt32, String)] = [
        (0, "org.freedesktop.Secret.Generic"), (1, "org.gnome.keyring.NetworkPassword"), (2, "org.gnome.keyring.Note"),
        (3, "org.gnome.keyring.ChainedKeyring"), (4, "org.gnome.keyring.EncryptionKey"), (0x100, "org.gnome.keyring.PkStorage"),
    ]

    static func schema(forItemType type: UInt32) -> String? {
        itemTypes.first { $0.0 == type & 0xffff }?.1
    }

    static func itemType(forSchema schema: String?) -> UInt32 {
        guard let schema else { return 0 }
        return itemTypes.first { $0.1 == schema }?.0 ?? 0
    }
}
