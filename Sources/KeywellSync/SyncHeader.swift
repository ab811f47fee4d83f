import Foundation
import KeywellCore
import KeywellProtocol

/// The folder's header file (`RecordName.headerFileName`): the sync key wrapped under Argon2id
/// of the sync password, with the cost it was wrapped with. The only file `sync join` needs
/// the password for; everything else opens with the key.
public enum SyncHeader {
    static let magic = Array("KWSH".utf8)
    static let format: UInt8 = 1

    /// The header's bytes for `key` under `password`, with Argon2id at `kdf`.
    public static func wrap(_ key: SyncKey, password: SecretBytes, kdf: KDFParameters) throws(KeychainError) -> [UInt8] {
        let salt = Sodium.randomData(count: Sodium.saltLength)
        var writer = ByteWriter()
        writer.raw(magic)
        writer.byte(format)
        writer.number(UInt64(kdf.opsLimit), width: 4)
        writer.number(UInt64(kdf.memLimit), width: 8)
        writer.raw(salt)
        let wrapping = try Sodium.deriveKey(password: password, salt: salt, parameters: kdf)
        let sealed = key.key.withUnsafeBytes { Sodium.seal($0, key: wrapping, associatedData: Data(writer.bytes)) }
        writer.raw(sealed)
        return writer.bytes
    }

    /// The key inside `header`; `errSecAuthFailed` when the password is wrong (or the header
    /// was altered: the two look alike), `errSecDecode` when it is no header at all.
    public static func unwrap(_ header: [UInt8], password: SecretBytes) throws(KeychainError) -> SyncKey {
        guard header.count <= SyncLimits.bytesPerHeader else { throw malformed("it is too large") }
        var reader = ByteReader(header)
        let prefix: (kdf: KDFParameters, salt: Data)
        do throws(SyncRefusal) {
            guard Array(try reader.raw(4)) == magic, try reader.byte() == format else { throw SyncRefusal("it is not a sync header") }
            let ops = try reader.number(width: 4), mem = try reader.number(width: 8)
            let kdf = KDFParameters(opsLimit: Int(ops), memLimit: Int(clamping: mem))
            guard kdf.isUsable else { throw SyncRefusal("its key-derivation cost is out of range") }
            prefix = (kdf, Data(try reader.raw(Sodium.saltLength)))
        } catch {
            throw malformed(error.reason)
        }
        let headerBytes = Data(header[0..<reader.offset])
        let sealed = Data(header[reader.offset...])
        guard Sodium.openedLength(of: sealed) == Sodium.keyLength else { throw malformed("its key is the wrong size") }
        let wrapping = try Sodium.deriveKey(password: password, salt: prefix.salt, parameters: prefix.kdf)
        let key = SecretBytes(count: Sodium.keyLength)
        let opened = key.withUnsafeMutableBytes { Sodium.open(sealed, key: wrapping, associatedData: headerBytes, into: $0) }
        guard opened else { throw KeychainError(SecStatus.authFailed, detail: "the sync password is wrong") }
        return SyncKey(key)
    }

    private static func malformed(_ why: String) -> KeychainError {
        KeychainError(SecStatus.decode, detail: "the sync folder's header is damaged: \(why)")
    }
}
