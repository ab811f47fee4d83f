/// The NIST curves OpenSSH's ECDSA keys use.
public enum SSHCurve: String, Sendable, CaseIterable {
    case p256 = "nistp256"
    case p384 = "nistp384"
    case p521 = "nistp521"

    /// Bytes of a scalar (a private key, a signature's r or s).
    public var scalarBytes: Int {
        switch self {
        case .p256: 32
        case .p384: 48
        case .p521: 66
        }
    }

    /// Bytes of an uncompressed point (0x04, x, y): the public key.
    public var pointBytes: Int { 1 + 2 * scalarBytes }

    /// The digest RFC 5656 pairs with the curve.
    public var digest: SSHDigest {
        switch self {
        case .p256: .sha256
        case .p384: .sha384
        case .p521: .sha512
        }
    }
}

public enum SSHDigest: Sendable {
    case sha1, sha256, sha384, sha512
}

/// The key types Keywell stores and signs with (docs/ssh.md, "Key types").
public enum SSHKeyType: Sendable, Hashable {
    case ed25519
    case ecdsa(SSHCurve)
    case rsa

    public init?(name: String) {
        switch name {
        case "ssh-ed25519": self = .ed25519
        case "ssh-rsa": self = .rsa
        default:
            guard name.hasPrefix("ecdsa-sha2-"), let curve = SSHCurve(rawValue: String(name.dropFirst("ecdsa-sha2-".count))) else {
                return nil
            }
            self = .ecdsa(curve)
        }
    }

    /// The name in key blobs and messages.
    public var name: String {
        switch self {
        case .ed25519: "ssh-ed25519"
        case .ecdsa(let curve): "ecdsa-sha2-\(curve.rawValue)"
        case .rsa: "ssh-rsa"
        }
    }

    /// What `ssh-keygen -l` calls the type.
    public var displayName: String {
        switch self {
        case .ed25519: "ED25519"
        case .ecdsa: "ECDSA"
        case .rsa: "RSA"
        }
    }
}
