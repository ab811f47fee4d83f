import CSodium
import KeywellSSHWire

/// libsodium's deterministic key pair, for keys the tests make without a program.
enum Ed25519TestKey {
    static func seedKeypair(_ publicKey: inout [UInt8], _ secretKey: inout [UInt8], _ seed: [UInt8]) -> Int32 {
        crypto_sign_seed_keypair(&publicKey, &secretKey, seed)
    }
}
