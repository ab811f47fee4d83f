import COpenSSL
import KeywellSSHWire

extension SSHCurve {
    /// OpenSSL's name for the group.
    var openSSLGroup: StaticString {
        switch self {
        case .p256: "P-256"
        case .p384: "P-384"
        case .p521: "P-521"
        }
    }
}

extension SSHDigest {
    /// OpenSSL's digest.
    var openSSLDigest: OpaquePointer? {
        switch self {
        case .sha1: EVP_sha1()
        case .sha256: EVP_sha256()
        case .sha384: EVP_sha384()
        case .sha512: EVP_sha512()
        }
    }
}
