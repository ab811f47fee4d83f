import Foundation
import KeywellCore
import KeywellProtocol

/// libsecret's file backend, the `keyrings/v1/` files oo7 reads and writes (docs/migration.md,
/// "libsecret's file format"):
///
///     "GnomeKeyring\n\r\0\n", version 1.0, then one GVariant (uayutua(a{say}ay)):
///     salt size, salt, PBKDF2 iterations, modified time, usage count,
///     items: (attribute name → HMAC of its value, encrypted blob)
///
/// The key is PBKDF2-HMAC-SHA256 (16 bytes) of the password; each blob is AES-128-CBC with
/// PKCS#7 padding, then its 16-byte IV, then an HMAC-SHA256 of ciphertext and IV. Inside is a
/// GVariant (a{ss}sttay): attributes, label, created, modified, secret.
public enum LibsecretFile {
    public static func matches(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 18 && Array(bytes[0..<16]) == GnomeKeyringBinary.magic && bytes[16] == 1 && bytes[17] == 0
    }

    public static func read(_ bytes: [UInt8], keyring: String, password: SecretBytes) throws(KeyringReadError) -> KeyringContents {
        guard bytes.count <= KeyringLimits.maximumFileSize else {
            throw .tooLarge(keyring: keyring, reason: "the file is over \(KeyringLimits.maximumFileSize) bytes")
        }
        guard matches(bytes) else { throw .unrecognized(keyring: keyring) }
        let result = bytes.withUnsafeBytes { buffer -> Result<KeyringContents, KeyringReadError> in
            do throws(GVariantReader.Failure) {
                return .success(try read(UnsafeRawBufferPointer(rebasing: buffer[18...]), keyring: keyring, password: password))
            } catch {
                if error.reason == wrongPasswordReason { return .failure(.wrongPassword(keyring: keyring)) }
                return .failure(.corrupt(keyring: keyring, reason: error.reason))
            }
        }
        return try result.get()
    }

    private static func read(_ body: UnsafeRawBufferPointer, keyring: String, password: SecretBytes) throws(GVariantReader.Failure) -> KeyringContents {
        let top = try GVariantReader(body).tuple([.uint32, .variable, .uint32, .uint64, .uint32, .variable])
        let saltSize = try top[0].uint32()
        let salt = Array(top[1].content)
        guard Int(saltSize) == salt.count, salt.count <= KeyringLimits.maximumSaltSize else {
            throw .init(reason: "the salt's size does not match")
        }
        let iterations = try top[2].uint32()
        guard iterations >= 1, iterations <= KeyringLimits.maximumPBKDF2Iterations else {
            throw .init(reason: "\(iterations) key derivation rounds (1...\(KeyringLimits.maximumPBKDF2Iterations))")
        }
        let modified = Int64(clamping: try top[3].uint64())
        let entries = try top[5].array(of: .variable, maximum: KeyringLimits.maximumItems)
        let key = KeyringCrypto.pbkdf2SHA256(password: password, salt: salt, iterations: iterations, length: 16)
        var items: [KeyringItem] = []
        var macFailures = 0
        for entry in entries {
            let parts = try entry.tuple([.variable, .variable])
            guard let item = try decrypt(parts[1].content, key: key) else {
                macFailures += 1
                continue
            }
            items.append(item)
        }
        if macFailures > 0 {
            // A wrong key fails every MAC; some failing is damage.
            if items.isEmpty { throw .init(reason: wrongPasswordReason) }
            throw .init(reason: "\(macFailures) item(s) fail their integrity check")
        }
        return KeyringContents(format: .libsecretFile, label: keyring, created: modified, modified: modified, items: items)
    }

    /// Every MAC failing travels as this reason and becomes `.wrongPassword`.
    private static let wrongPasswordReason = "every item fails its integrity check"

    /// nil when the MAC does not match (wrong key or damage).
    private static func decrypt(_ blob: UnsafeRawBufferPointer, key: SecretBytes) throws(GVariantReader.Failure) -> KeyringItem? {
        guard blob.count >= 16 + 16 + 32, (blob.count - 48) % 16 == 0 else { throw .init(reason: "an item's blob has a bad size") }
        let macStart = blob.count - 32
        let mac = key.withUnsafeBytes { KeyringCrypto.hmacSHA256(key: $0, UnsafeRawBufferPointer(rebasing: blob[0..<macStart])) }
        guard KeyringCrypto.equal(mac, UnsafeRawBufferPointer(rebasing: blob[macStart...])) else { return nil }
        let ivStart = macStart - 16
        let plain = key.withUnsafeBytes { k in
            KeyringCrypto.aes128CBC(encrypt: false, key: k, iv: UnsafeRawBufferPointer(rebasing: blob[ivStart..<macStart]),
                                    UnsafeRawBufferPointer(rebasing: blob[0..<ivStart]))
        }
        guard let plain else { throw .init(reason: "an item cannot be decrypted") }
        return try plain.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws(GVariantReader.Failure) -> KeyringItem in
            try item(decrypted: bytes)
        }
    }

    /// An item's decrypted blob, its PKCS#7 padding still on: the GVariant (a{ss}sttay). Apart
    /// from `decrypt` so that the fuzz target reaches it without forging MACs.
    static func item(decrypted bytes: UnsafeRawBufferPointer) throws(GVariantReader.Failure) -> KeyringItem {
        guard let last = bytes.last else { throw .init(reason: "an item's padding is damaged") }
        let padding = Int(last)
        guard (1...16).contains(padding), padding <= bytes.count else { throw .init(reason: "an item's padding is damaged") }
        let fields = try GVariantReader(bytes, end: bytes.count - padding)
            .tuple([.variable, .variable, .uint64, .uint64, .variable])
        var attributes: [String: String] = [:]
        for pair in try fields[0].array(of: .variable, maximum: KeyringLimits.maximumAttributesPerItem) {
            let entry = try pair.tuple([.variable, .variable])
            attributes[try entry[0].string()] = try entry[1].string()
        }
        return KeyringItem(
            identity: "attributes:" + identity(of: attributes), label: try fields[1].string(), attributes: attributes,
            schema: nil, secret: SecretBytes(copying: fields[4].content),
            created: Int64(clamping: try fields[2].uint64()), modified: Int64(clamping: try fields[3].uint64()))
    }

    /// libsecret keeps one item per attribute set (storing again replaces), so the set names it.
    static func identity(of attributes: [String: String]) -> String {
        var text = ""
        for name in attributes.keys.sorted() { text += "\(name.utf8.count):\(name)\(attributes[name]!.utf8.count):\(attributes[name]!)" }
        return LowercaseHex.string(Array(text.utf8).withUnsafeBytes { KeyringCrypto.sha256($0) })
    }
}
