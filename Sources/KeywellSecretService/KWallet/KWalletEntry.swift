import Foundation
import KeywellProtocol
import KeywellSystem

/// One wallet entry's type and value, and how it is kept as a free-form item (docs/kwallet.md,
/// "One item, four faces"): attribute `type` = `plaintext`, `base64` or `map`; the secret the
/// password's UTF-8, the bytes' base64, the map's compact JSON.
enum KWalletEntry: Equatable {
    /// The password's UTF-8 (well-formed), in locked memory wiped when done: it never becomes a
    /// `String` on its way between D-Bus and the item's secret (docs/kwallet.md, "Passwords in memory").
    case password(SecretBytes)
    case stream([UInt8])
    case map([String: String])

    /// KWallet's `EntryType` numbers.
    enum Kind: Int32 {
        case unknown = 0
        case password = 1
        case stream = 2
        case map = 3

        /// The kind an item's `type` attribute names; an item without one (or with another) is
        /// a password, as KWallet's bridge reads it. QtKeychain's `binary` is raw bytes.
        init(typeAttribute: String?) {
            switch typeAttribute {
            case "base64", "binary": self = .stream
            case "map": self = .map
            default: self = .password
            }
        }

        var typeAttribute: String {
            switch self {
            case .stream: "base64"
            case .map: "map"
            case .password, .unknown: "plaintext"
            }
        }
    }

    var kind: Kind {
        switch self {
        case .password: .password
        case .stream: .stream
        case .map: .map
        }
    }

    /// The attributes of the item for `folder`/`key`.
    static func attributes(folder: String, key: String, kind: Kind) -> [String: String] {
        [
            SecretServiceMapping.schemaAttribute: KWalletProtocol.schema,
            KWalletProtocol.folderAttribute: folder,
            KWalletProtocol.keyAttribute: key,
            KWalletProtocol.typeAttribute: kind.typeAttribute,
        ]
    }

    static func label(folder: String, key: String) -> String { "\(folder)/\(key)" }

    /// The item's secret.
    var secret: Data {
        switch self {
        case .password(let text): text.withUnsafeBytes { Data($0) }
        case .stream(let bytes): Data(Data(bytes).base64EncodedString().utf8)
        case .map(let map): KWalletJSONMap.encode(map)
        }
    }

    /// The entry an item of `kind` with this secret holds; nil when the secret does not read as
    /// that kind (a map that is not JSON, base64 that is not base64).
    init?(kind: Kind, typeAttribute: String?, secret: Data) {
        switch kind {
        case .password, .unknown:
            // Ill-formed UTF-8 (a secret written through another face) reads as
            // `String(decoding:as:)` reads it: each bad sequence a U+FFFD.
            self = .password(secret.withUnsafeBytes { SecretText.repairingUTF8($0) })
        case .stream:
            if typeAttribute == "binary" { self = .stream(Array(secret)); return }
            let text = String(decoding: secret, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let bytes = Data(base64Encoded: text) else { return nil }
            self = .stream(Array(bytes))
        case .map:
            guard let map = KWalletJSONMap.decode(secret) else { return nil }
            self = .map(map)
        }
    }

    /// What `readEntry` returns, as kwalletd keeps each kind: a password as a QDataStream
    /// QString, a map as its QDataStream bytes, a stream as itself.
    func rawValue(order: QDataStreamMap.Order) -> [UInt8] {
        switch self {
        case .password(let text): QDataStreamMap.encodeString(secret: text)
        case .stream(let bytes): bytes
        case .map(let map): QDataStreamMap.encode(map, order: order)
        }
    }

    /// The entry `writeEntry(…, entryType)` makes of raw bytes (the reverse of `rawValue`).
    static func fromRaw(_ bytes: [UInt8], kind: Kind) throws(QDataStreamMap.Failure) -> KWalletEntry {
        switch kind {
        case .password: .password(try QDataStreamMap.decodeSecretString(bytes))
        case .map: .map(try QDataStreamMap.decode(bytes))
        case .stream, .unknown: .stream(bytes)
        }
    }
}
