import COpenSSL
import CSodium
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// AES-128-CBC with PKCS#7 padding under a session key, as the DH session algorithm carries secrets:
/// the 16-byte IV travels in the secret's `parameters`, the ciphertext in its `value`.
public struct AESCBCCipher: Sendable {
    public static let blockSize = 16
    private let key: SecretBytes

    public init(key: SecretBytes) {
        precondition(key.count == 16, "AES-128 needs a 16-byte key")
        self.key = key
    }

    /// Encrypts with a fresh random IV; returns (iv, ciphertext).
    public func seal(_ plaintext: [UInt8]) throws(SecretCryptoError) -> (iv: [UInt8], ciphertext: [UInt8]) {
        try plaintext.withUnsafeBytes { bytes in Result { () throws(SecretCryptoError) in try seal(bytes) } }.get()
    }

    /// Encrypts one plaintext where it lies, with a fresh random IV (a GetSecret's reply): the IV
    /// drawn straight into its array, the key and the IV set in one `EVP_CipherInit_ex`, and no
    /// `Sealer` or batch of IVs for a single secret. The context, and so the key schedule, is
    /// freed before this returns (docs/performance.md, "Reads with fewer steps").
    public func seal(_ plaintext: UnsafeRawBufferPointer) throws(SecretCryptoError) -> (iv: [UInt8], ciphertext: [UInt8]) {
        let iv = Self.randomBytes(count: Self.blockSize)
        let context = try CipherContext(key: key, iv: iv, encrypt: true)
        return (iv, try context.crypt(input: plaintext, encrypt: true))
    }

    /// `count` random bytes, written into the array's storage (no zero fill, no generic
    /// `Array(repeating:count:)` first). One IV comes from `IVReserve`; more from one
    /// `getrandom` (`fillRandom`).
    fileprivate static func randomBytes(count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialised in
            if count == blockSize {
                IVReserve.draw(into: buffer.baseAddress!)
            } else {
                fillRandom(UnsafeMutableRawBufferPointer(buffer))
            }
            initialised = count
        }
    }

    /// Random IVs for `count` secrets (`sealer(ivs:)`), from one system call.
    public static func randomIVs(count: Int) -> [UInt8] {
        randomBytes(count: blockSize * max(count, 1))
    }

    /// Fills `buffer` from the kernel's generator, as libsodium's `randombytes_buf` does, but in
    /// one `getrandom` for the whole buffer: libsodium asks for at most 256 bytes a call, which
    /// was 63 system calls for the IVs of a GetSecrets of 1,000 items (docs/performance.md,
    /// "GetSecrets of many items"). The kernel answers a request this size whole once its
    /// generator is seeded; a short or failed answer (a signal, an old kernel) is finished by
    /// libsodium.
    static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        let got = buffer.count <= 1 << 25 ? KernelRandom.getrandom?(base, buffer.count, 0) ?? -1 : -1
        let done = max(got, 0)
        if done < buffer.count { randombytes_buf(base + done, buffer.count - done) }
    }

    /// The ciphertext's length for a plaintext of `count` bytes (PKCS#7 pads to the next block).
    public static func sealedLength(of count: Int) -> Int {
        (count / blockSize + 1) * blockSize
    }

    /// Encrypts each plaintext with a fresh random IV of its own (`Sealer`).
    public func sealAll(_ plaintexts: [[UInt8]]) throws(SecretCryptoError) -> [(iv: [UInt8], ciphertext: [UInt8])] {
        guard !plaintexts.isEmpty else { return [] }
        let sealer = try sealer(count: plaintexts.count)
        var sealed: [(iv: [UInt8], ciphertext: [UInt8])] = []
        sealed.reserveCapacity(plaintexts.count)
        for plaintext in plaintexts {
            sealed.append(try plaintext.withUnsafeBytes { bytes in Result { () throws(SecretCryptoError) in try sealer.seal(bytes) } }.get())
        }
        return sealed
    }

    /// A sealer for up to `count` plaintexts, which the caller hands over in place (no copy of a
    /// secret into an array of its own first).
    public func sealer(count: Int) throws(SecretCryptoError) -> Sealer {
        Sealer(context: try CipherContext(key: key, encrypt: true), ivs: Self.randomIVs(count: count)[...])
    }

    /// A sealer with no IVs drawn, for `Sealer.ciphertext(of:iv:into:)` given each IV: the
    /// threads sealing halves of one batch each take their IVs from the batch's one draw
    /// (`randomIVs`), with a cipher context of their own.
    public func sealer() throws(SecretCryptoError) -> Sealer {
        Sealer(context: try CipherContext(key: key, encrypt: true), ivs: [])
    }

    /// Seals a batch: one cipher context (the key schedule expanded once, each plaintext setting
    /// a new IV only) and one draw of random bytes for all the IVs (GetSecrets of a thousand
    /// items), instead of one each. The IVs come from libsodium (the kernel's getrandom): in a
    /// profile, OpenSSL's RAND_bytes took three fifths of a GetSecret's sealing, more than the
    /// encryption itself.
    public final class Sealer {
        private let context: CipherContext
        private var ivs: ArraySlice<UInt8>
        private var used: Int

        fileprivate init(context: consuming CipherContext, ivs: ArraySlice<UInt8>) {
            self.ivs = ivs
            used = ivs.startIndex
            self.context = context
        }

        /// The next IV of the batch and `plaintext` under it; a call past `count` draws afresh.
        public func seal(_ plaintext: UnsafeRawBufferPointer) throws(SecretCryptoError) -> (iv: [UInt8], ciphertext: [UInt8]) {
            if used == ivs.endIndex {
                ivs = AESCBCCipher.randomIVs(count: ivs.count / AESCBCCipher.blockSize)[...]
                used = ivs.startIndex
            }
            let iv = Array(ivs[used..<used + AESCBCCipher.blockSize])
            used += AESCBCCipher.blockSize
            return (iv, try iv.withUnsafeBytes { iv in
                Result { () throws(SecretCryptoError) in try context.run(iv: iv, input: plaintext, encrypt: true) }
            }.get())
        }

        /// `plaintext` under `iv` (one block, used once: a slice of `randomIVs`, which the caller
        /// keeps as the secret's parameters), written into `output`, which needs room for the
        /// plaintext and one block more (OpenSSL's rule; `sealedLength(of:)` bytes are written):
        /// a batch's ciphertexts in one array, with no allocation each. Returns the bytes written.
        public func ciphertext(of plaintext: UnsafeRawBufferPointer, iv: ArraySlice<UInt8>,
                               into output: UnsafeMutableRawBufferPointer) throws(SecretCryptoError) -> Int {
            precondition(iv.count == AESCBCCipher.blockSize, "an IV is one block")
            return try iv.withUnsafeBytes { iv in
                Result { () throws(SecretCryptoError) in try context.run(iv: iv, input: plaintext, encrypt: true, into: output) }
            }.get()
        }

    }

    /// Decrypts and checks the padding; bad sizes or padding are `malformedCiphertext`.
    public func open(iv: [UInt8], ciphertext: [UInt8]) throws(SecretCryptoError) -> [UInt8] {
        guard iv.count == Self.blockSize, !ciphertext.isEmpty, ciphertext.count % Self.blockSize == 0 else {
            throw .malformedCiphertext
        }
        return try run(encrypt: false, iv: iv, input: ciphertext)
    }

    func run(encrypt: Bool, iv: [UInt8], input: [UInt8]) throws(SecretCryptoError) -> [UInt8] {
        let context = try CipherContext(key: key, iv: iv, encrypt: encrypt)
        return try input.withUnsafeBytes { bytes in
            Result { () throws(SecretCryptoError) in try context.crypt(input: bytes, encrypt: encrypt) }
        }.get()
    }
}

/// An OpenSSL cipher context holding the key schedule; each run sets a new IV only. Its cipher
/// comes from `CipherLibrary`, which keeps its library context while any context is alive.
/// Not copyable, so it needs no object of its own: the one owner frees it (a GetSecret's reply
/// allocates one object less, docs/performance.md, "What a read pays around its handler").
private struct CipherContext: ~Copyable {
    private let context: OpaquePointer

    /// With `iv`, the key and the IV are set in one call (a context for one plaintext); without,
    /// each `run` sets its own.
    init(key: SecretBytes, iv: [UInt8]? = nil, encrypt: Bool) throws(SecretCryptoError) {
        let cipher = try CipherLibrary.acquireAES128CBC()
        guard let context = EVP_CIPHER_CTX_new() else {
            CipherLibrary.release()
            throw .library("EVP_CIPHER_CTX_new")
        }
        let initialised = key.withUnsafeBytes { keyBytes in
            let keyStart = keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            guard let iv else { return EVP_CipherInit_ex(context, cipher, nil, keyStart, nil, encrypt ? 1 : 0) }
            return iv.withUnsafeBufferPointer { EVP_CipherInit_ex(context, cipher, nil, keyStart, $0.baseAddress, encrypt ? 1 : 0) }
        }
        guard initialised == 1 else {
            // Not yet initialised, so no deinit runs: freed here.
            EVP_CIPHER_CTX_free(context)
            CipherLibrary.release()
            throw .library("EVP_CipherInit_ex")
        }
        self.context = context
    }

    deinit {
        EVP_CIPHER_CTX_free(context)  // frees and cleanses the expanded key schedule
        CipherLibrary.release()
    }

    func run(iv: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer, encrypt: Bool) throws(SecretCryptoError) -> [UInt8] {
        let ivStart = iv.baseAddress!.assumingMemoryBound(to: UInt8.self)
        guard EVP_CipherInit_ex(context, nil, nil, nil, ivStart, encrypt ? 1 : 0) == 1 else { throw .library("EVP_CipherInit_ex") }
        return try crypt(input: input, encrypt: encrypt)
    }

    func run(iv: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer, encrypt: Bool,
             into output: UnsafeMutableRawBufferPointer) throws(SecretCryptoError) -> Int {
        let ivStart = iv.baseAddress!.assumingMemoryBound(to: UInt8.self)
        guard EVP_CipherInit_ex(context, nil, nil, nil, ivStart, encrypt ? 1 : 0) == 1 else { throw .library("EVP_CipherInit_ex") }
        return try crypt(input: input, encrypt: encrypt, into: output)
    }

    /// `input` under the IV set last.
    func crypt(input: UnsafeRawBufferPointer, encrypt: Bool) throws(SecretCryptoError) -> [UInt8] {
        var failure: SecretCryptoError?
        // Written straight into the array's storage: no zero fill first.
        let output = [UInt8](unsafeUninitializedCapacity: input.count + AESCBCCipher.blockSize) { out, count in
            do throws(SecretCryptoError) {
                count = try crypt(input: input, encrypt: encrypt, into: UnsafeMutableRawBufferPointer(out))
            } catch {
                failure = error
                count = 0
            }
        }
        if let failure { throw failure }
        return output
    }

    /// `input` under the IV set last, into `output` (at least `input.count` plus one block);
    /// returns the bytes written.
    func crypt(input: UnsafeRawBufferPointer, encrypt: Bool, into output: UnsafeMutableRawBufferPointer) throws(SecretCryptoError) -> Int {
        precondition(output.count >= input.count + AESCBCCipher.blockSize, "room for the padding")
        let out = output.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var written: Int32 = 0
        var finalWritten: Int32 = 0
        let empty: UInt8 = 0
        let source = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let ok = withUnsafePointer(to: empty) { empty in
            EVP_CipherUpdate(context, out, &written, source ?? empty, Int32(input.count)) == 1
        } && EVP_CipherFinal_ex(context, out + Int(written), &finalWritten) == 1
        guard ok else {
            // A decryption that failed at the padding has written all but the last block.
            SecretMemory.wipe(output)
            ERR_clear_error()
            throw encrypt ? .library("EVP_Cipher") : .malformedCiphertext
        }
        return Int(written + finalWritten)
    }
}

/// glibc's `getrandom`, which Swift's Glibc module does not export; looked up once.
private enum KernelRandom {
    typealias Function = @convention(c) (UnsafeMutableRawPointer, Int, UInt32) -> Int
    static let getrandom: Function? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "getrandom") else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }()
}

/// Random bytes for single IVs (GetSecret seals one secret per reply), drawn a page at a time
/// (`fillRandom`): one `getrandom` per 256 replies instead of one each. An IV is no secret (it
/// travels beside the ciphertext) but must not be foreseeable before it is used; the reserve
/// comes from the kernel's generator and every IV is handed out once.
private enum IVReserve {
    private static let bytes = 4096
    private static let reserve = Protected<(storage: UnsafeMutableRawPointer, used: Int)>((UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16), bytes))

    static func draw(into destination: UnsafeMutableRawPointer) {
        reserve.withLock { reserve in
            if reserve.used == bytes {
                AESCBCCipher.fillRandom(UnsafeMutableRawBufferPointer(start: reserve.storage, count: bytes))
                reserve.used = 0
            }
            destination.copyMemory(from: reserve.storage + reserve.used, byteCount: AESCBCCipher.blockSize)
            reserve.used += AESCBCCipher.blockSize
        }
    }
}
