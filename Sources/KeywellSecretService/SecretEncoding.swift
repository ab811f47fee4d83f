import Foundation
import KeywellCore
import KeywellDBus
import KeywellSystem
import SecretServiceCrypto

/// The `(oayays)` secret struct: (session, parameters, value, content type). In a `plain` session
/// the value is the secret and the parameters are empty; in a DH session the parameters are the
/// 16-byte IV and the value is AES-128-CBC ciphertext, so the secret never crosses the bus in clear.
enum SecretEncoding {
    static let signature: DBusSignature = "(oayays)"

    /// Reads a secret a client sent; the session must be the caller's.
    static func decode(_ value: DBusValue, caller: String, sessions: SessionManager) throws(DBusError) -> SecretServiceSecret {
        guard let fields = value.structureFields, fields.count == 4, let sessionPath = fields[0].objectPathValue,
              let parameters = fields[1].bytesValue, let payload = fields[2].bytesValue, let contentType = fields[3].stringValue
        else { throw .invalidArgs("A secret is (oayays), got \(value.signature.rawValue)") }
        try checkSizes(parameters: parameters, payload: payload, contentType: contentType)
        let session = try sessions.session(at: sessionPath, for: caller)
        guard let cipher = session.cipher else {
            return SecretServiceSecret(value: SecretWipe.wipingData(copying: payload), contentType: contentType)
        }
        let opened: [UInt8]
        do {
            opened = try cipher.open(iv: parameters, ciphertext: payload)
        } catch {
            throw .invalidArgs("The secret cannot be decrypted with the session key (bad IV, length or padding)")
        }
        defer { SecretWipe.wipe(opened) }
        // Padding may have hidden up to 15 bytes over the cap.
        try CallLimits.checkBytes(opened.count, .secret, "The secret")
        return SecretServiceSecret(value: SecretWipe.wipingData(copying: opened), contentType: contentType)
    }

    /// Before any copy: the secret's cap, plus one AES block of padding for ciphertext; the IV
    /// is one block (a plain session sends none).
    private static func checkSizes(parameters: [UInt8], payload: [UInt8], contentType: String) throws(DBusError) {
        try CallLimits.checkBytes(payload.count - (parameters.isEmpty ? 0 : aesBlockBytes), .secret, "The secret")
        try CallLimits.check(parameters.count, atMost: aesBlockBytes, "A secret's parameters have", "bytes")
        try CallLimits.checkBytes(contentType.utf8.count, .attributeValue, "The content type")
    }

    private static let aesBlockBytes = 16

    /// A secret for `session`: encrypted with a fresh IV in a DH session. One secret (GetSecret)
    /// goes through `AESCBCCipher.seal` directly: no batch of one, no `Sealer`.
    static func encode(_ secret: SecretServiceSecret, for session: SecretSession) throws(DBusError) -> DBusValue {
        let sessionPath = DBusValue.objectPath(session.path)
        guard let cipher = session.cipher else {
            return .structure([sessionPath, .bytes([]), .bytes(bytes(secret.value)), .string(secret.contentType)])
        }
        do {
            let box = try secret.value.withUnsafeBytes { bytes in Result { () throws(SecretCryptoError) in try cipher.seal(bytes) } }.get()
            return .structure([sessionPath, .bytes(box.iv), .bytes(box.ciphertext), .string(secret.contentType)])
        } catch {
            throw .failed("Cannot encrypt the secret: \(error)")
        }
    }

    /// A secret as the reply carries it, less its session: in a plain session `value` is a copy
    /// of the plaintext, which the caller wipes once it is written.
    struct Sealed {
        /// The IV: in a batch, a slice of the batch's one draw.
        let parameters: ArraySlice<UInt8>
        /// In a batch, a slice of its half's ciphertexts.
        let value: ArraySlice<UInt8>
        let contentType: String
    }

    /// Seals secrets for one session: in a DH session each gets a fresh IV, and one cipher
    /// context and one draw of random IVs serve the batch (GetSecrets of a thousand). Each secret
    /// is encrypted from where it lies (no copy of the plaintext first).
    struct Sealing {
        private let sealer: AESCBCCipher.Sealer?

        /// For up to `count` secrets (more still work: the IVs are drawn again).
        init(for session: SecretSession, count: Int) throws(DBusError) {
            do {
                sealer = try session.cipher?.sealer(count: count)
            } catch {
                throw .failed("Cannot encrypt the secrets: \(error)")
            }
        }

        func seal(_ secret: SecretServiceSecret) throws(DBusError) -> Sealed {
            guard let sealer else {
                return Sealed(parameters: [], value: SecretEncoding.bytes(secret.value)[...], contentType: secret.contentType)
            }
            do {
                let box = try secret.value.withUnsafeBytes { bytes in Result { () throws(SecretCryptoError) in try sealer.seal(bytes) } }.get()
                return Sealed(parameters: box.iv[...], value: box.ciphertext[...], contentType: secret.contentType)
            } catch {
                throw .failed("Cannot encrypt the secrets: \(error)")
            }
        }
    }

    /// `count` secrets sealed for `session`, in order (`secret(index)` gives each). Many in a
    /// DH session are sealed on two threads (`TwoHalves`; docs/performance.md, "GetSecrets of
    /// many items"), each half with a cipher context of its own and its part of the batch's IVs,
    /// drawn in one system call. The secrets must not change meanwhile (`secret` is called from
    /// both threads). Fails as sealing them one by one would.
    static func sealAll(count: Int, for session: SecretSession,
                        _ secret: (Int) -> SecretServiceSecret) throws(DBusError) -> [Sealed] {
        guard count > 0 else { return [] }
        guard let cipher = session.cipher, count >= TwoHalves.minimumItems else {
            let sealing = try Sealing(for: session, count: count)
            var sealed: [Sealed] = []
            sealed.reserveCapacity(count)
            for index in 0..<count { sealed.append(try sealing.seal(secret(index))) }
            return sealed
        }
        let ivs = AESCBCCipher.randomIVs(count: count)
        func iv(of index: Int) -> ArraySlice<UInt8> {
            ivs[(index * AESCBCCipher.blockSize)..<((index + 1) * AESCBCCipher.blockSize)]
        }
        var sealed = [Sealed?](repeating: nil, count: count)
        var failures: [SecretCryptoError?] = [nil, nil]
        sealed.withUnsafeMutableBufferPointer { sealed in
            failures.withUnsafeMutableBufferPointer { failures in
                TwoHalves.forEachHalf(count: count) { range in
                    let half = range.lowerBound == 0 ? 0 : 1
                    // The half's ciphertexts in one array, each secret's a slice of it: no
                    // allocation per secret (both threads share the daemon's one malloc arena).
                    // One block more: OpenSSL asks for a block of room past the input.
                    var total = AESCBCCipher.blockSize
                    for index in range { total += AESCBCCipher.sealedLength(of: secret(index).value.count) }
                    var ends: [Int] = []
                    ends.reserveCapacity(range.count)
                    let ciphertexts = [UInt8](unsafeUninitializedCapacity: total) { out, written in
                        written = 0
                        do throws(SecretCryptoError) {
                            let sealer = try cipher.sealer()
                            for index in range {
                                let room = UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: out[written...]))
                                written += try secret(index).value.withUnsafeBytes { bytes in
                                    Result { () throws(SecretCryptoError) in try sealer.ciphertext(of: bytes, iv: iv(of: index), into: room) }
                                }.get()
                                ends.append(written)
                            }
                        } catch {
                            failures[half] = error
                        }
                    }
                    guard failures[half] == nil else { return }
                    var start = 0
                    for (position, index) in range.enumerated() {
                        sealed[index] = Sealed(parameters: iv(of: index), value: ciphertexts[start..<ends[position]], contentType: secret(index).contentType)
                        start = ends[position]
                    }
                }
            }
        }
        if let failure = failures[0] ?? failures[1] { throw .failed("Cannot encrypt the secrets: \(failure)") }
        return sealed.map { $0! }
    }

    /// Writes `sealed` as the `(oayays)` struct of the session at `sessionPath`.
    static func write(_ sealed: Sealed, sessionPath: DBusCheckedPath, into writer: inout DBusBodyWriter) throws(DBusError) {
        try writer.appendStructure { (fields) throws(DBusError) in
            try fields.appendObjectPath(sessionPath)
            try sealed.parameters.withUnsafeBytes { iv in Result { () throws(DBusError) in try fields.appendBytes(iv) } }.get()
            try sealed.value.withUnsafeBytes { value in Result { () throws(DBusError) in try fields.appendBytes(value) } }.get()
            try fields.appendString(sealed.contentType)
        }
    }

    /// One copy of the bytes: `Array(data)` walks them through Data's iterator.
    private static func bytes(_ data: Data) -> [UInt8] {
        data.withUnsafeBytes { [UInt8]($0) }
    }
}
