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
