import KeywellProtocol

/// For audits that look for a keychain's key where it should not be (the memory scan in
/// `keywell-bench security-report`): the master key a keychain file wraps, unwrapped with its
/// password the same way an unlock does. Whoever has the file and the password can compute it
/// anyway; this only spares the audit a second copy of the file format.
public enum KeychainFileAudit {
    public static func masterKey(ofKeychainAt path: String, password: SecretBytes) throws(KeychainError) -> SecretBytes {
        try KeychainDatabase(opening: path).readHeader().unwrapMasterKey(password: password)
    }
}
