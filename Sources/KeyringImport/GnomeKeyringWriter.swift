import CSodium
import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSystem

/// Writes gnome-keyring's binary `.keyring` file (the way back, docs/migration.md): the layout
/// `GnomeKeyringBinary` reads, as gnome-keyring-daemon itself writes it, so the daemon opens the
/// file with `password`. String attributes only (the Secret Service has no other kind).
public enum GnomeKeyringWriter {
    public struct Item {
        public let id: UInt32
        public let label: String
        public let attributes: [String: String]
        /// `Item.Type`: kept as gnome-keyring's numeric type.
        public let schema: String?
        public let secret: SecretBytes
        public let created: Int64
        public let modified: Int64

        public init(id: UInt32, label: String, attributes: [String: String], schema: String?, secret: SecretBytes,
                    created: Int64, modified: Int64) {
            self.id = id
            self.label = label
            self.attributes = attributes
            self.schema = schema
            self.secret = secret
            self.created = created
            self.modified = modified
        }
    }

    /// The file's bytes (secrets only encrypted). gnome-keyring picks 1000...4095 iterations.
    public static func write(label: String, created: Int64, modified: Int64, items: [Item], password: SecretBytes) -> [UInt8] {
        let salt = KeyringCrypto.randomBytes(8)
        let iterations = UInt32(1000 + Int(KeyringCrypto.randomBytes(2).withUnsafeBytes { $0.load(as: UInt16.self) }) % 3096)
        var header = ByteWriter()
        header.bytes = GnomeKeyringBinary.magic + [0, 0, 0, 0]
        header.string(label)
        header.time(modified)
        header.time(created)
        header.uint32(0)  // flags: no lock on idle
        header.uint32(0)  // lock timeout
        header.uint32(iterations)
        header.bytes += salt
        for _ in 0..<4 { header.uint32(0) }
        header.uint32(UInt32(items.count))
        for item in items {
            header.uint32(item.id)
            header.uint32(GnomeKeyringBinary.itemType(forSchema: item.schema ?? item.attributes[GnomeKeyringBinary.schemaAttribute]))
            let names = item.attributes.keys.sorted()
            header.uint32(UInt32(names.count))
            for name in names {
                header.string(name)
                header.uint32(0)
                header.string(LowercaseHex.string(KeyringCrypto.md5(Array(item.attributes[name]!.utf8))))
            }
        }

        var plain = ByteWriter()
        plain.bytes = [UInt8](repeating: 0, count: 16)
        for item in items {
            plain.string(item.label)
            item.secret.withUnsafeBytes { plain.raw($0) }
            plain.time(item.created)
            plain.time(item.modified)
            plain.string(nil)
            for _ in 0..<4 { plain.uint32(0) }
            let names = item.attributes.keys.sorted()
            plain.uint32(UInt32(names.count))
            for name in names {
                plain.string(name)
                plain.uint32(0)
                plain.string(item.attributes[name]!)
            }
            plain.uint32(0)  // no access list: any application
        }
        while plain.bytes.count % 16 != 0 { plain.byte(0) }
        let check = plain.bytes.withUnsafeBytes { KeyringCrypto.md5(UnsafeRawBufferPointer(rebasing: $0[16...])) }
        plain.bytes.replaceSubrange(0..<16, with: check)

        let keyAndIV = KeyringCrypto.iteratedSHA256(password: password, salt: salt, iterations: iterations)
        let encrypted = keyAndIV.withUnsafeBytes { kv in
            plain.bytes.withUnsafeBytes { input in
                KeyringCrypto.aes128CBC(encrypt: true, key: UnsafeRawBufferPointer(rebasing: kv[0..<16]),
                                        iv: UnsafeRawBufferPointer(rebasing: kv[16..<32]), input)!
            }
        }
        // The plaintext held the secrets: wipe it before it is freed.
        plain.bytes.withUnsafeMutableBytes { SecretMemory.wipe($0) }
        header.uint32(UInt32(encrypted.count))
        encrypted.withUnsafeBytes { header.bytes += $0 }
        return header.bytes
    }
}
