import CSodium
import KeywellCore
import KeywellSSHWire

/// `ssh-add -x`/`-X`: the agent's own lock. Only a keyed hash of the passphrase is kept (a
/// random key for each lock), so the passphrase itself is not in memory while locked. Failed
/// unlocks are slowed as OpenSSH's agent slows them, by the caller waiting `delay`.
struct AgentLock {
    private var key: [UInt8]?
    private var hash: [UInt8]?
    private(set) var failures = 0

    var isLocked: Bool { hash != nil }

    /// Locks with `passphrase`; false when already locked or the passphrase is empty.
    mutating func lock(_ passphrase: SecretBytes) -> Bool {
        guard !isLocked, passphrase.count > 0 else { return false }
        var newKey = [UInt8](repeating: 0, count: Int(crypto_generichash_KEYBYTES))
        randombytes_buf(&newKey, newKey.count)
        key = newKey
        hash = Self.hash(passphrase, key: newKey)
        return true
    }

    /// Unlocks when `passphrase` is the one locked with.
    mutating func unlock(_ passphrase: SecretBytes) -> Bool {
        guard let key, let hash, passphrase.count > 0 else { return false }
        let candidate = Self.hash(passphrase, key: key)
        guard sodium_memcmp(candidate, hash, hash.count) == 0 else {
            failures = min(failures + 1, 100)
            return false
        }
        self.key = nil
        self.hash = nil
        failures = 0
        return true
    }

    /// How long a failed unlock waits before its answer: 0.1 s more for each failure in a row, up to 10 s.
    var delay: Duration { .milliseconds(100 * failures) }

    private static func hash(_ passphrase: SecretBytes, key: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(crypto_generichash_BYTES))
        passphrase.withUnsafeBytes { bytes in
            _ = crypto_generichash(&output, output.count, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                   UInt64(bytes.count), key, key.count)
        }
        return output
    }
}
