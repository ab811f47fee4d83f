/// Why a Secret Service session could not be set up or a secret could not be opened.
public enum SecretCryptoError: Error, Equatable, Sendable {
    /// The client's public key is empty, too long, or not in the range 2 ... p-2.
    case invalidPublicKey
    /// Parameters (the IV) are not 16 bytes, the ciphertext is empty or not whole blocks, or the padding is wrong.
    case malformedCiphertext
    /// OpenSSL refused an operation it should not refuse (out of memory, broken installation).
    case library(String)
}
