import FoundationEssentials
import KeywellNativeClient

#if canImport(Glibc)
import Glibc
#endif

/// When a person runs a command at a terminal and it meets a locked keychain, macOS asks for
/// that keychain's password and goes on; a script (standard input not a terminal) keeps
/// `security`'s failure, exit 36 and its message (docs/cli.md, "Locked keychains").
extension CommandContext {
    /// Wrong passwords tolerated before giving up, as sudo does.
    static let terminalUnlockAttempts = 3

    /// Asks on the terminal for the password of `keychain` (a daemon name) and unlocks it;
    /// true when it is unlocked. False at once when standard input is not a terminal.
    func unlockOnTerminal(_ keychain: String) -> Bool {
        guard isatty(0) == 1 else { return false }
        let shown = naming.displayName(for: keychain)
        for _ in 0..<Self.terminalUnlockAttempts {
            guard let password = PasswordInput.read(prompt: "password to unlock \(shown): ") else { return false }
            defer { password.wipe() }
            do {
                try client.unlock(keychain, password: password)
                return true
            } catch where error.status == SecStatus.authFailed {
                diagnostics.error("SecKeychainUnlock \(shown): \(error.message)")
            } catch {
                diagnostics.error("SecKeychainUnlock \(shown): \(error.message)")
                return false
            }
        }
        return false
    }
}
