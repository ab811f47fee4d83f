import CSodium
import Foundation
import KeywellProtocol
import KeywellSystem

/// The libsodium primitives Keywell uses: random bytes, Argon2id, XChaCha20-Poly1305, subkeys
/// (BLAKE2b key derivation) and keyed BLAKE2b MACs.
package enum Sodium {
    package static let keyLength = Int(crypto_aead_xchacha20poly1305_ietf_keybytes())
    package static let nonceLength = Int(crypto_aead_xchacha20poly1305_ietf_npubbytes())
    package static let tagLength = Int(crypto_aead_xchacha20poly1305_ietf_abytes())
    package static let saltLength = Int(crypto_pwhash_saltbytes())

    package static func ensureInitialized() {
        SecretMemory.ensureSodiumInitialized()
    }

    package static func randomData(count: Int) -> Data {
        ensureInitialized()
        var data = Data(count: count)
        data.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) }
        return data
    }

    package static func randomKey() -> SecretBytes {
        let key = SecretBytes(count: keyLength)
        key.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, keyLength) }
        return key
    }

    /// Argon2id(password, salt) → a key for wrapping the master key.
    package static func deriveKey(
        password: SecretBytes, salt: Data, parameters: KDFParameters
    ) throws(KeychainError) -> SecretBytes {
        guard salt.count == saltLength, parameters.isUsable else {
            throw KeychainError(SecStatus.invalidKeychain, detail: "unusable key-derivation parameters")
        }
        let key = SecretBytes(count: keyLength)
        let status = key.withUnsafeMutableBytes { keyBytes in
            password.withUnsafeBytes { passwordBytes in
                salt.withUnsafeBytes { saltBytes in
                    crypto_pwhash(
                        keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(keyLength),
                        // SecretBytes always has a valid pointer, even when empty.
                        passwordBytes.baseAddress!.assumingMemoryBound(to: CChar.self), UInt64(password.count),
                        saltBytes.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        UInt64(parameters.opsLimit), Int(parameters.memLimit),
                        crypto_pwhash_alg_argon2id13()
                    )
                }
            }
        }
        guard status == 0 else {
            throw KeychainError(SecStatus.allocate, detail: "Argon2id could not get \(parameters.memLimit >> 20) MiB of memory")
        }
        return key
    }

    /// nonce ‖ ciphertext ‖ tag of `plaintext` under `key`, bound to `associatedData`.
    package static func seal(_ plaintext: UnsafeRawBufferPointer, key: SecretBytes, associatedData: Data) -> Data {
        let nonce = randomData(count: nonceLength)
        var sealed = Data(count: nonceLength + plaintext.count + tagLength)
        sealed.withUnsafeMutableBytes { output in
            let out = output.baseAddress!.assumingMemoryBound(to: UInt8.self)
            nonce.withUnsafeBytes { out.update(from: $0.baseAddress!.assumingMemoryBound(to: UInt8.self), count: nonceLength) }
            var cipherLength: UInt64 = 0
            key.withUnsafeBytes { keyBytes in
                associatedData.withUnsafeBytes { ad in
                    _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                        out + nonceLength, &cipherLength,
                        plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                        ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count),
                        nil, out, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    )
                }
            }
        }
        return sealed
    }

    package static func seal(_ plaintext: Data, key: SecretBytes, associatedData: Data) -> Data {
        plaintext.withUnsafeBytes { seal($0, key: key, associatedData: associatedData) }
    }

    /// The plaintext length of a sealed box, or nil when it is too short to be one.
    package static func openedLength(of sealed: Data) -> Int? {
        let length = sealed.count - nonceLength - tagLength
        return length >= 0 ? length : nil
    }

    /// Opens a sealed box into `output` (exactly `openedLength` bytes); false when it fails to
    /// authenticate (altered, moved, or the wrong key).
    package static func open(
        _ sealed: Data, key: SecretBytes, associatedData: Data, into output: UnsafeMutableRawBufferPointer
    ) -> Bool {
        guard let length = openedLength(of: sealed), output.count == length else { return false }
        let status = sealed.withUnsafeBytes { input in
            let box = input.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var plainLength: UInt64 = 0
            return key.withUnsafeBytes { keyBytes in
                associatedData.withUnsafeBytes { ad in
                    crypto_aead_xchacha20poly1305_ietf_decrypt(
                        output.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        &plainLength, nil,
                        box + nonceLength, UInt64(sealed.count - nonceLength),
                        ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count),
                        box, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    )
                }
            }
        }
        return status == 0
    }

    /// Opens a sealed secret; anything that fails to authenticate is `errSecDecode`.
    package static func open(_ sealed: Data, key: SecretBytes, associatedData: Data) throws(KeychainError) -> Data {
        guard let length = openedLength(of: sealed) else {
            throw KeychainError(SecStatus.decode, detail: "sealed secret is truncated")
        }
        // Storage wiped on release, so the plaintext does not outlive its last holder.
        guard let plaintext = SecretWipe.wipingData(count: length, { open(sealed, key: key, associatedData: associatedData, into: $0) }) else {
            throw KeychainError(SecStatus.decode, detail: "sealed secret failed to authenticate")
        }
        return plaintext
    }

    package static let macLength = Int(crypto_generichash_bytes())

    /// A subkey of `key` (`crypto_kdf_derive_from_key`): keys for different jobs from one master
    /// key, none of which tells anything about the others. `context` is exactly 8 bytes.
    package static func deriveSubkey(of key: SecretBytes, id: UInt64, context: StaticString) -> SecretBytes {
        precondition(context.utf8CodeUnitCount == Int(crypto_kdf_contextbytes()) && key.count == Int(crypto_kdf_keybytes()))
        let subkey = SecretBytes(count: keyLength)
        subkey.withUnsafeMutableBytes { output in
            key.withUnsafeBytes { master in
                context.withUTF8Buffer { name in
                    _ = name.withMemoryRebound(to: CChar.self) { name in
                        crypto_kdf_derive_from_key(
                            output.baseAddress!.assumingMemoryBound(to: UInt8.self), keyLength, id, name.baseAddress!,
                            master.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        return subkey
    }

    /// Keyed BLAKE2b of `message`: `macLength` bytes.
    package static func mac(_ message: UnsafeRawBufferPointer, key: SecretBytes) -> Data {
        var output = Data(count: macLength)
        output.withUnsafeMutableBytes { out in
            key.withUnsafeBytes { keyBytes in
                _ = crypto_generichash(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), macLength,
                    message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
                    keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count)
            }
        }
        return output
    }

    /// Unkeyed BLAKE2b of `parts` one after the other: a fingerprint, not a MAC.
    package static func hash(_ parts: [Data]) -> Data {
        let message = parts.reduce(Data(), +)
        var output = Data(count: macLength)
        output.withUnsafeMutableBytes { out in
            message.withUnsafeBytes { input in
                _ = crypto_generichash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), macLength,
                                       input.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(input.count), nil, 0)
            }
        }
        return output
    }

    /// Compares two MACs in constant time; false when the lengths differ.
    package static func macsEqual(_ left: Data, _ right: Data) -> Bool {
        guard left.count == right.count, left.count > 0 else { return false }
        return left.withUnsafeBytes { a in
            right.withUnsafeBytes { b in sodium_memcmp(a.baseAddress!, b.baseAddress!, left.count) == 0 }
        }
    }
}
