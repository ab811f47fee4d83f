import CSodium

/// Argon2id cost (libsodium `crypto_pwhash`, ALG_ARGON2ID13). Stored in each keychain file, so a
/// keychain keeps opening with the values it was wrapped with and new values can be raised later.
public struct KDFParameters: Sendable, Codable, Equatable {
    /// Passes over memory.
    public var opsLimit: Int
    /// Bytes of memory.
    public var memLimit: Int

    public init(opsLimit: Int, memLimit: Int) {
        self.opsLimit = opsLimit
        self.memLimit = memLimit
    }

    /// About 0.2 s per unlock on a 2-core machine (measured: 3 passes over 128 MiB).
    public static let `default` = KDFParameters(opsLimit: 3, memLimit: 128 << 20)

    /// libsodium's minimum: for tests that create many keychains. Never for real keychains.
    public static let fastForTests = KDFParameters(
        opsLimit: Int(crypto_pwhash_opslimit_min()),
        memLimit: Int(crypto_pwhash_memlimit_min())
    )

    /// Values libsodium accepts, with memory capped so that a crafted file cannot ask for all RAM.
    package var isUsable: Bool {
        opsLimit >= Int(crypto_pwhash_opslimit_min()) && opsLimit <= 64
            && memLimit >= Int(crypto_pwhash_memlimit_min()) && memLimit <= 4 << 30
    }
}
