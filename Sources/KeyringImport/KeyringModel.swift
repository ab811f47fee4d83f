import Foundation
import KeywellCore
import KeywellProtocol

/// One item read from a keyring file. The secret stays in locked, self-wiping memory.
public struct KeyringItem: Sendable {
    /// Stable within one source file: gnome-keyring's numeric item id, or for libsecret's file
    /// format (which has none) a hash of the attributes (that format keeps one item per set).
    public let identity: String
    public let label: String
    public let attributes: [String: String]
    /// The item type for items without `xdg:schema` (gnome-keyring's old numeric types).
    public let schema: String?
    public let secret: SecretBytes
    public let contentType: String
    /// Seconds since 1970, as the file has them.
    public let created: Int64
    public let modified: Int64

    public init(identity: String, label: String, attributes: [String: String], schema: String?, secret: SecretBytes,
                contentType: String = KeyringItem.defaultContentType, created: Int64, modified: Int64) {
        self.identity = identity
        self.label = label
        self.attributes = attributes
        self.schema = schema
        self.secret = secret
        self.contentType = contentType
        self.created = created
        self.modified = modified
    }

    /// Neither gnome-keyring's files nor libsecret's keep a content type; both hand secrets out as this.
    public static let defaultContentType = "text/plain"
}

/// A keyring file's contents once opened.
public struct KeyringContents: Sendable {
    public let format: KeyringFormat
    public let label: String
    public let created: Int64
    public let modified: Int64
    public let items: [KeyringItem]
}

/// Why a keyring file could not be read. Messages name the keyring, never a secret.
public enum KeyringReadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not a keyring file of a known format and version.
    case unrecognized(keyring: String)
    /// Truncated or damaged: `reason` says where.
    case corrupt(keyring: String, reason: String)
    /// Over a documented cap (file size, item count, iterations).
    case tooLarge(keyring: String, reason: String)
    case wrongPassword(keyring: String)
    /// The file needs a password and none was given.
    case needsPassword(keyring: String)
    /// A GPG wallet gpg could not open (gpg missing, no secret key, the passphrase refused).
    case cannotDecrypt(keyring: String, reason: String)

    public var description: String {
        switch self {
        case .unrecognized(let keyring): "keyring \(keyring) is not in a keyring format Keywell reads"
        case .corrupt(let keyring, let reason): "keyring \(keyring) is damaged: \(reason)"
        case .tooLarge(let keyring, let reason): "keyring \(keyring) is over a limit: \(reason)"
        case .wrongPassword(let keyring): "wrong password for keyring \(keyring)"
        case .needsPassword(let keyring): "keyring \(keyring) needs its password"
        case .cannotDecrypt(let keyring, let reason): "keyring \(keyring) cannot be decrypted: \(reason)"
        }
    }
}

/// The caps every reader enforces (docs/migration.md, "Limits"): a hostile file costs at most
/// this much memory and time.
public enum KeyringLimits {
    public static let maximumFileSize = 64 << 20
    public static let maximumItems = 100_000
    public static let maximumAttributesPerItem = 1_024
    /// gnome-keyring writes 1000...4095 rounds of SHA-256.
    public static let maximumHashIterations: UInt32 = 1_000_000
    /// libsecret writes 100 000 rounds of PBKDF2: ten times that at most keeps a hostile file's
    /// cost at login to about a second.
    public static let maximumPBKDF2Iterations: UInt32 = 1_000_000
    public static let maximumSaltSize = 1_024
}

/// A file's SHA-256 for the migration's record of what it read.
public enum KeyringDigest {
    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        LowercaseHex.string(bytes.withUnsafeBytes { KeyringCrypto.sha256($0) })
    }
}
