// Two calls macOS tools use that Apple declares in SecKeychainPriv.h rather than the public
// headers: on macOS this file needs those declarations (a bridging header); otherwise it is
// written as for Apple platforms, like AppleStyleProgram.swift.
import Foundation
import KeychainServices

extension Keychains {
    static func loginKeychain() -> (OSStatus, SecKeychain?) {
        var keychain: SecKeychain?
        let status = SecKeychainCopyLogin(&keychain)
        return (status, keychain)
    }

    static func changePassword(_ keychain: SecKeychain, from old: String, to new: String) -> OSStatus {
        SecKeychainChangePassword(keychain, UInt32(old.utf8.count), old, UInt32(new.utf8.count), new)
    }
}
