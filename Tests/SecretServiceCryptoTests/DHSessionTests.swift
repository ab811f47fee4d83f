import Dispatch
import Glibc
import KeywellSystem
import Testing

@testable import SecretServiceCrypto

private func hex(_ string: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = string.startIndex
    while index < string.endIndex {
        let next = string.index(index, offsetBy: 2)
        bytes.append(UInt8(string[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

private func keyBytes(_ key: SecretBytes) -> [UInt8] { key.withUnsafeBytes { Array($0) } }

@Test func bothSidesDeriveTheSameKey() throws {
    let server = try DHKeyExchange()
    let client = try DHKeyExchange()
    #expect(server.publicKey.count == 128)
    let serverKey = try server.deriveKey(peerPublicKey: client.publicKey)
    let clientKey = try client.deriveKey(peerPublicKey: server.publicKey)
    #expect(serverKey.count == 16)
    #expect(keyBytes(serverKey) == keyBytes(clientKey))
    let stranger = try DHKeyExchange()
    #expect(keyBytes(try stranger.deriveKey(peerPublicKey: server.publicKey)) != keyBytes(clientKey))
}

@Test func unpaddedAndPaddedPublicKeysAgree() throws {
    // libsecret sends the minimal big-endian form, secretstorage pads to 128 bytes.
    let server = try DHKeyExchange()
    var client = try DHKeyExchange()
    while client.publicKey.first != 0 { client = try DHKeyExchange() }
    let minimal = Array(client.publicKey.drop(while: { $0 == 0 }))
    #expect(minimal.count < 128)
    #expect(keyBytes(try server.deriveKey(peerPublicKey: minimal))
        == keyBytes(try server.deriveKey(peerPublicKey: client.publicKey)))
}

@Test func degenerateAndOversizedPublicKeysAreRefused() throws {
    let server = try DHKeyExchange()
    let prime = hex(
        "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
        + "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
        + "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF")
    var primeMinusOne = prime
    primeMinusOne[127] -= 1
    for bad in [[], [0], [1], [0, 0, 1], prime, primeMinusOne, [UInt8](repeating: 0xFF, count: 129)] {
        #expect(throws: SecretCryptoError.invalidPublicKey) { try server.deriveKey(peerPublicKey: bad) }
    }
}

@Test func hkdfMatchesRFC5869TestCase3() throws {
    // RFC 5869 A.3: SHA-256, 22 bytes of 0x0b, no salt, no info.
    let ikm = [UInt8](repeating: 0x0b, count: 22)
    let okm = try ikm.withUnsafeBytes { try hkdfSHA256(inputKey: $0, length: 42) }
    #expect(keyBytes(okm) == hex(
        "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"))
}

@Test func aesCBCMatchesNISTVectorAndRoundTrips() throws {
    // NIST SP 800-38A F.2.1, first block; PKCS#7 then adds one block of padding.
    let key = hex("2b7e151628aed2a6abf7158809cf4f3c").withUnsafeBytes { SecretBytes(copying: $0) }
    let cipher = AESCBCCipher(key: key)
    let iv = hex("000102030405060708090a0b0c0d0e0f")
    let sealed = try cipher.run(encrypt: true, iv: iv, input: hex("6bc1bee22e409f96e93d7e117393172a"))
    #expect(sealed.count == 32)
    #expect(Array(sealed.prefix(16)) == hex("7649abac8119b246cee98e9b12e9197d"))
    #expect(try cipher.open(iv: iv, ciphertext: sealed) == hex("6bc1bee22e409f96e93d7e117393172a"))

    for plaintext in [[UInt8](), Array("pässwörd".utf8), [UInt8](repeating: 7, count: 1 << 20)] {
        let (iv, ciphertext) = try cipher.seal(plaintext)
        #expect(iv.count == 16)
        #expect(ciphertext.count == (plaintext.count / 16 + 1) * 16)
        #expect(try cipher.open(iv: iv, ciphertext: ciphertext) == plaintext)
    }
}

@Test func sealingManyAtOnceGivesEachItsOwnIV() throws {
    let cipher = AESCBCCipher(key: [UInt8](repeating: 3, count: 16).withUnsafeBytes { SecretBytes(copying: $0) })
    let plaintexts = [Array("one".utf8), [], Array("the same".utf8), Array("the same".utf8), [UInt8](repeating: 9, count: 100)]
    let sealed = try cipher.sealAll(plaintexts)
    #expect(sealed.count == plaintexts.count)
    #expect(Set(sealed.map(\.iv)).count == plaintexts.count)  // fresh IVs: equal plaintexts differ on the wire
    #expect(sealed[2].ciphertext != sealed[3].ciphertext)
    for (box, plaintext) in zip(sealed, plaintexts) {
        #expect(try cipher.open(iv: box.iv, ciphertext: box.ciphertext) == plaintext)
    }
    #expect(try cipher.sealAll([]).isEmpty)
}

/// A sealer seals plaintexts where they lie, each under its own IV, also past the count it
/// drew IVs for.
@Test func aSealerGivesEachPlaintextItsOwnIVPastItsCount() throws {
    let cipher = AESCBCCipher(key: [UInt8](repeating: 5, count: 16).withUnsafeBytes { SecretBytes(copying: $0) })
    let sealer = try cipher.sealer(count: 2)
    let plaintexts = [Array("a".utf8), [], [UInt8](repeating: 7, count: 16), Array("a".utf8), [UInt8](repeating: 1, count: 33)]
    let sealed = try plaintexts.map { plaintext in try plaintext.withUnsafeBytes { try sealer.seal($0) } }
    #expect(Set(sealed.map(\.iv)).count == plaintexts.count)
    for (box, plaintext) in zip(sealed, plaintexts) {
        #expect(box.ciphertext.count == (plaintext.count / 16 + 1) * 16)
        #expect(try cipher.open(iv: box.iv, ciphertext: box.ciphertext) == plaintext)
    }
}

/// A batch's IVs come from one draw (`randomIVs`, one getrandom): as many blocks as asked, at
/// least one, none repeated; a sealer given none seals under each IV handed to it, which is the
/// IV the ciphertext opens with (NIST SP 800-38A F.2.1's first block).
@Test func aBatchsIVsFromOneDrawSealAsGiven() throws {
    for count in [0, 1, 2, 17, 1000] {
        let ivs = AESCBCCipher.randomIVs(count: count)
        #expect(ivs.count == 16 * max(count, 1))
        let blocks = stride(from: 0, to: ivs.count, by: 16).map { Array(ivs[$0..<$0 + 16]) }
        #expect(Set(blocks).count == blocks.count)
    }
    let key = hex("2b7e151628aed2a6abf7158809cf4f3c").withUnsafeBytes { SecretBytes(copying: $0) }
    let cipher = AESCBCCipher(key: key)
    let sealer = try cipher.sealer()
    let ivs = [UInt8](repeating: 0xee, count: 16) + hex("000102030405060708090a0b0c0d0e0f")
    var ciphertext = [UInt8](repeating: 0, count: 48)
    let written = try hex("6bc1bee22e409f96e93d7e117393172a").withUnsafeBytes { plaintext in
        try ciphertext.withUnsafeMutableBytes { try sealer.ciphertext(of: plaintext, iv: ivs[16...], into: $0) }
    }
    ciphertext.removeSubrange(written...)
    #expect(Array(ciphertext.prefix(16)) == hex("7649abac8119b246cee98e9b12e9197d"))
    #expect(try cipher.open(iv: Array(ivs[16...]), ciphertext: ciphertext) == hex("6bc1bee22e409f96e93d7e117393172a"))
    // Many into one buffer, back to back, with one block of room past the last (as a batch's
    // half writes them): each the ciphertext `seal` would give under that IV.
    let plaintexts: [[UInt8]] = [[], Array(repeating: 1, count: 15), Array(repeating: 2, count: 16), Array(repeating: 3, count: 17), Array("x".utf8)]
    let batchIVs = AESCBCCipher.randomIVs(count: plaintexts.count)
    var buffer = [UInt8](repeating: 0, count: plaintexts.reduce(16) { $0 + AESCBCCipher.sealedLength(of: $1.count) })
    var ends: [Int] = []
    try buffer.withUnsafeMutableBytes { out in
        var written = 0
        for (index, plaintext) in plaintexts.enumerated() {
            written += try plaintext.withUnsafeBytes {
                try sealer.ciphertext(of: $0, iv: batchIVs[(16 * index)..<(16 * index + 16)], into: UnsafeMutableRawBufferPointer(rebasing: out[written...]))
            }
            ends.append(written)
        }
    }
    #expect(ends.last == buffer.count - 16)
    for (index, plaintext) in plaintexts.enumerated() {
        let piece = Array(buffer[(index == 0 ? 0 : ends[index - 1])..<ends[index]])
        #expect(piece.count == AESCBCCipher.sealedLength(of: plaintext.count))
        #expect(try cipher.open(iv: Array(batchIVs[(16 * index)..<(16 * index + 16)]), ciphertext: piece) == plaintext)
    }
    // The same sealer goes on drawing its own IVs for `seal`.
    let drawn = try [UInt8]("x".utf8).withUnsafeBytes { try sealer.seal($0) }
    #expect(try cipher.open(iv: drawn.iv, ciphertext: drawn.ciphertext) == Array("x".utf8))
}

/// One secret sealed on its own (a GetSecret's reply) draws its own IV each time: the same
/// plaintext twice differs on the wire, and each opens with the key. 600 seals take the IVs of
/// more than two of the reserve's pages (256 each), so its refills are crossed too.
@Test func sealingOneSecretDrawsAFreshIVEachTime() throws {
    let cipher = AESCBCCipher(key: [UInt8](repeating: 6, count: 16).withUnsafeBytes { SecretBytes(copying: $0) })
    let plaintext = Array("the same".utf8)
    let boxes = try (0..<600).map { _ in try plaintext.withUnsafeBytes { try cipher.seal($0) } }
    #expect(Set(boxes.map(\.iv)).count == boxes.count)
    #expect(Set(boxes.map(\.ciphertext)).count == boxes.count)
    for box in boxes {
        #expect(box.iv.count == 16 && box.ciphertext.count == 16)
        #expect(try cipher.open(iv: box.iv, ciphertext: box.ciphertext) == plaintext)
    }
}

/// Replies sealed on several threads at once never get the same IV from the shared reserve.
@Test func singleSealsOnManyThreadsGetDistinctIVs() throws {
    let cipher = AESCBCCipher(key: [UInt8](repeating: 7, count: 16).withUnsafeBytes { SecretBytes(copying: $0) })
    let ivs = Protected<[[UInt8]]>([])
    DispatchQueue.concurrentPerform(iterations: 4) { _ in
        for _ in 0..<300 {
            guard let box = try? [UInt8](repeating: 1, count: 20).withUnsafeBytes({ try cipher.seal($0) }) else { continue }
            ivs.withLock { $0.append(box.iv) }
        }
    }
    let all = ivs.withLock { $0 }
    #expect(all.count == 1200)
    #expect(Set(all).count == all.count)
}

@Test func malformedCiphertextIsRefused() throws {
    let key = [UInt8](repeating: 1, count: 16).withUnsafeBytes { SecretBytes(copying: $0) }
    let cipher = AESCBCCipher(key: key)
    let (iv, ciphertext) = try cipher.seal(Array("secret".utf8))
    #expect(throws: SecretCryptoError.malformedCiphertext) { try cipher.open(iv: Array(iv.prefix(15)), ciphertext: ciphertext) }
    #expect(throws: SecretCryptoError.malformedCiphertext) { try cipher.open(iv: iv, ciphertext: []) }
    #expect(throws: SecretCryptoError.malformedCiphertext) { try cipher.open(iv: iv, ciphertext: Array(ciphertext.dropLast())) }
    // A wrong key almost always breaks the padding; when it does not, the bytes differ.
    let other = AESCBCCipher(key: [UInt8](repeating: 2, count: 16).withUnsafeBytes { SecretBytes(copying: $0) })
    let result = Result { try other.open(iv: iv, ciphertext: ciphertext) }
    if case .success(let bytes) = result { #expect(bytes != Array("secret".utf8)) }
}

@Test func sessionsWorkAcrossTheCipherLibrarysRelease() throws {
    // The daemon frees OpenSSL's library context when idle; a session open across that keeps
    // working, with its key, on the context made again.
    let server = try DHKeyExchange(), client = try DHKeyExchange()
    let cipher = AESCBCCipher(key: try server.deriveKey(peerPublicKey: client.publicKey))
    let peer = AESCBCCipher(key: try client.deriveKey(peerPublicKey: server.publicKey))
    // Seals before and after the release, twice each side, all open with the peer's key.
    _ = try cipher.seal(Array("first".utf8))
    let before = try cipher.seal(Array("before".utf8))
    // Other tests may hold a cipher context for a moment: the release waits for none in use.
    var released = false
    for _ in 0..<1000 where !released {
        released = CipherLibrary.releaseIfUnused()
        if !released { usleep(1000) }
    }
    #expect(released)
    #expect(try peer.open(iv: before.iv, ciphertext: before.ciphertext) == Array("before".utf8))
    let after = try peer.seal(Array("after".utf8))
    #expect(try cipher.open(iv: after.iv, ciphertext: after.ciphertext) == Array("after".utf8))
    let again = try cipher.seal(Array("again".utf8))
    #expect(try peer.open(iv: again.iv, ciphertext: again.ciphertext) == Array("again".utf8))
}
