import Foundation
import KeywellCore
import KeywellProtocol

/// Qt's QDataStream values inside a KWallet file (docs/migration.md, "KWallet's wallet file"):
/// a QString is a 32-bit big-endian byte count (0xffffffff: null) and UTF-16BE; a QByteArray
/// the same count and raw bytes; a QMap<QString,QString> a 32-bit count and that many pairs.
enum QDataStreamValue {
    static func string(_ reader: inout ByteReader, _ what: String) throws(KeyringReadError) -> String? {
        guard let run = try reader.byteArray(what) else { return nil }
        guard run.count % 2 == 0 else { throw reader.corrupt("\(what) has an odd UTF-16 length") }
        var units: [UInt16] = []
        units.reserveCapacity(run.count / 2)
        var index = 0
        while index < run.count {
            units.append(UInt16(run[index]) << 8 | UInt16(run[index + 1]))
            index += 2
        }
        guard let string = String(validating: units, as: UTF16.self) else { throw reader.corrupt("\(what) is not UTF-16") }
        return string
    }

    static func map(_ reader: inout ByteReader, _ what: String) throws(KeyringReadError) -> [String: String] {
        let count = Int(try reader.uint32(what))
        // Every pair takes at least two 4-byte lengths.
        guard count <= reader.remaining / 8 else { throw reader.corrupt("\(what) has more pairs than bytes") }
        var map: [String: String] = [:]
        for _ in 0..<count {
            let key = try string(&reader, what) ?? ""
            map[key] = try string(&reader, what) ?? ""
        }
        return map
    }
}

/// One KWallet entry's value as the item keywelld's KWallet API would have made of it
/// (docs/kwallet.md, "One item, four faces").
struct KWalletEntryValue {
    let typeAttribute: String
    let secret: SecretBytes

    /// Nil for a type KWallet does not know (0 or over 3).
    init?(type: UInt32, value: UnsafeRawBufferPointer, keyring: String, name: String) throws(KeyringReadError) {
        var reader = ByteReader(value, keyring: keyring)
        switch type {
        case 1:
            typeAttribute = "plaintext"
            let password = value.isEmpty ? "" : try QDataStreamValue.string(&reader, "entry \(name)'s password") ?? ""
            secret = SecretBytes(copying: Array(password.utf8))
        case 2:
            typeAttribute = "base64"
            secret = SecretBytes(copying: Array(Data(value).base64EncodedString().utf8))
        case 3:
            typeAttribute = "map"
            let map = value.isEmpty ? [:] : try QDataStreamValue.map(&reader, "entry \(name)'s map")
            secret = SecretBytes(copying: KWalletMapJSON.encode(map))
        default:
            return nil
        }
        guard reader.remaining == 0 || type == 2 else { throw reader.corrupt("entry \(name)'s value has bytes after its end") }
    }
}
