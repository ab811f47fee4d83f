import COpenSSL
import CSodium
import KeywellCore
import KeywellSSHWire

/// Why a key cannot sign.
public struct SigningError: Error, Sendable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
}

/// Signatures in SSH's encoding (RFC 8709 Ed25519, RFC 5656 ECDSA, RFC 8332 RSA): Ed25519 with
/// libsodium, ECDSA and RSA with OpenSSL's libcrypto. The private key is read in place from its
/// locked memory; OpenSSL's copy of it lives only for the one signature and is freed (and
/// cleared) before this returns.
public enum SSHSigner {
    /// `string algorithm, string signature` for `data`, by the key `privateKey` holds in the
    /// agent's encoding. RSA picks its hash from `flags` (SHA-1 `ssh-rsa` when none is set).
    public static func sign(_ privateKey: SecretBytes, data: [UInt8], flags: SignatureFlags) throws(SigningError) -> [UInt8] {
        try privateKey.withUnsafeBytes { buffer throws(SigningError) in
            var reader = SSHWireReader(buffer)
            let fields: KeyFields
            do throws(AgentParseError) { fields = try KeyFields(&reader) } catch { throw SigningError(error.reason) }
            var blob = SSHWireWriter()
            switch fields {
            case .ed25519(let secretKey):
                var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
                crypto_sign_detached(&signature, nil, data, UInt64(data.count), secretKey.baseAddress!.assumingMemoryBound(to: UInt8.self))
                blob.text(SSHKeyType.ed25519.name)
                blob.string(signature)
            case .ecdsa(let curve, _, _):
                let der = try withOpenSSLKey(fields) { key throws(SigningError) in try digestSign(key, curve.digest, data) }
                let (r, s) = try DERSignature.integers(der)
                var inner = SSHWireWriter()
                inner.mpint(magnitude: r)
                inner.mpint(magnitude: s)
                blob.text(SSHKeyType.ecdsa(curve).name)
                blob.string(inner.bytes)
            case .rsa:
                let (name, digest): (String, SSHDigest) =
                    flags.contains(.rsaSHA512) ? ("rsa-sha2-512", .sha512)
                    : flags.contains(.rsaSHA256) ? ("rsa-sha2-256", .sha256) : ("ssh-rsa", .sha1)
                let signature = try withOpenSSLKey(fields) { key throws(SigningError) in try digestSign(key, digest, data) }
                blob.text(name)
                blob.string(signature)
            }
            return blob.bytes
        }
    }

    /// Checks that a key's numbers make a key (for ECDSA and RSA, OpenSSL's pairwise check;
    /// for Ed25519, a signature its public key verifies).
    static func check(_ privateKey: SecretBytes) throws(SigningError) {
        try privateKey.withUnsafeBytes { buffer throws(SigningError) in
            var reader = SSHWireReader(buffer)
            let fields: KeyFields
            do throws(AgentParseError) { fields = try KeyFields(&reader) } catch { throw SigningError(error.reason) }
            switch fields {
            case .ed25519(let secretKey):
                let probe = Array("keywell key check".utf8)
                var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
                let key = secretKey.baseAddress!.assumingMemoryBound(to: UInt8.self)
                crypto_sign_detached(&signature, nil, probe, UInt64(probe.count), key)
                guard crypto_sign_verify_detached(signature, probe, UInt64(probe.count), key + 32) == 0 else {
                    throw SigningError("the Ed25519 public key does not belong to the private key")
                }
            case .ecdsa, .rsa:
                try withOpenSSLKey(fields) { key throws(SigningError) in
                    guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { throw SigningError("out of memory") }
                    defer { EVP_PKEY_CTX_free(context) }
                    guard EVP_PKEY_check(context) == 1 else { throw SigningError("OpenSSL's key check failed") }
                }
            }
        }
    }

    private static func digestSign(_ key: OpaquePointer, _ digest: SSHDigest, _ data: [UInt8]) throws(SigningError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw SigningError("out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, digest.openSSLDigest, nil, key) == 1 else { throw SigningError("OpenSSL could not start the signature") }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, data, data.count) == 1 else { throw SigningError("OpenSSL could not size the signature") }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, data, data.count) == 1 else { throw SigningError("OpenSSL could not sign") }
        return Array(signature[..<length])
    }

    /// OpenSSL's secure heap: locked memory, kept out of core dumps and cleared when freed, where
    /// `BN_secure_new` puts a key's private numbers. Made once, at the first ECDSA or RSA key.
    private static let secureHeap: Int32 = CRYPTO_secure_malloc_init(secureHeapBytes, 16)
    /// Room for the private numbers of a few 16384-bit RSA keys in use at once (a power of two).
    private static let secureHeapBytes = 1 << 20

    /// `EVP_PKEY_KEYPAIR`: a macro Swift does not import (public and private key, all parameters).
    private static let keyPairSelection: Int32 = 0x87

    /// Builds OpenSSL's key for the one call `body` makes, from numbers kept in OpenSSL's secure
    /// big numbers, and frees it all (clearing the private numbers) afterwards.
    private static func withOpenSSLKey<Result>(_ fields: KeyFields, _ body: (OpaquePointer) throws(SigningError) -> Result) throws(SigningError) -> Result {
        _ = secureHeap
        guard let builder = OSSL_PARAM_BLD_new() else { throw SigningError("out of memory") }
        defer { OSSL_PARAM_BLD_free(builder) }
        var numbers = SecureNumbers()
        defer { numbers.free() }
        let algorithm: String
        switch fields {
        case .ed25519:
            throw SigningError("Ed25519 does not use OpenSSL here")
        case .ecdsa(let curve, let point, let scalar):
            algorithm = "EC"
            guard OSSL_PARAM_BLD_push_utf8_string(builder, cString("group"), cString(curve.openSSLGroup), 0) == 1,
                OSSL_PARAM_BLD_push_octet_string(builder, cString("pub"), point.baseAddress, point.count) == 1,
                OSSL_PARAM_BLD_push_BN(builder, cString("priv"), try numbers.make(scalar)) == 1
            else { throw SigningError("OpenSSL refused the key's numbers") }
        case .rsa(let n, let e, let d, let iqmp, let p, let q):
            algorithm = "RSA"
            let (dmp1, dmq1) = try numbers.crtExponents(d: numbers.make(d), p: numbers.make(p), q: numbers.make(q))
            let named: [(StaticString, OpaquePointer)] = [
                ("n", try numbers.make(n)), ("e", try numbers.make(e)), ("d", try numbers.make(d)),
                ("rsa-factor1", try numbers.make(p)), ("rsa-factor2", try numbers.make(q)),
                ("rsa-exponent1", dmp1), ("rsa-exponent2", dmq1), ("rsa-coefficient1", try numbers.make(iqmp)),
            ]
            for (name, number) in named {
                guard OSSL_PARAM_BLD_push_BN(builder, cString(name), number) == 1 else { throw SigningError("OpenSSL refused the key's numbers") }
            }
        }
        guard let parameters = OSSL_PARAM_BLD_to_param(builder) else { throw SigningError("out of memory") }
        // The private numbers in it sit in OpenSSL's secure heap, which clears what it frees.
        defer { OSSL_PARAM_free(parameters) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, algorithm, nil) else { throw SigningError("OpenSSL has no \(algorithm)") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1, EVP_PKEY_fromdata(context, &key, keyPairSelection, parameters) == 1, let key else {
            throw SigningError("OpenSSL refused the key (\(openSSLReason()))")
        }
        defer { EVP_PKEY_free(key) }
        return try body(key)
    }
}

/// A C string that lives forever: OpenSSL's parameter builder keeps the pointers it is given
/// (names and strings) until the parameters are made, longer than a Swift string's temporary.
func cString(_ text: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// OpenSSL's reason for the last failure on this thread (its queue is emptied).
func openSSLReason() -> String {
    var last: UInt = 0
    while case let code = ERR_get_error(), code != 0 { last = code }
    guard last != 0 else { return "no reason given" }
    var text = [CChar](repeating: 0, count: 256)
    ERR_error_string_n(last, &text, text.count)
    return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The big numbers made for one key, freed together with `BN_clear_free`.
private struct SecureNumbers {
    private var made: [OpaquePointer] = []

    mutating func make(_ magnitude: UnsafeRawBufferPointer) throws(SigningError) -> OpaquePointer {
        guard let number = BN_secure_new() else { throw SigningError("out of memory") }
        made.append(number)
        guard BN_bin2bn(magnitude.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(magnitude.count), number) != nil else {
            throw SigningError("OpenSSL refused a number")
        }
        return number
    }

    /// d mod (p-1) and d mod (q-1): the agent's encoding leaves them out, OpenSSL wants them.
    mutating func crtExponents(d: OpaquePointer, p: OpaquePointer, q: OpaquePointer) throws(SigningError) -> (OpaquePointer, OpaquePointer) {
        guard let context = BN_CTX_secure_new() else { throw SigningError("out of memory") }
        defer { BN_CTX_free(context) }
        var results: [OpaquePointer] = []
        for prime in [p, q] {
            guard let reduced = BN_secure_new(), let result = BN_secure_new() else { throw SigningError("out of memory") }
            made += [reduced, result]
            guard BN_sub(reduced, prime, BN_value_one()) == 1, BN_div(nil, result, d, reduced, context) == 1 else {
                throw SigningError("OpenSSL could not reduce the exponent")
            }
            results.append(result)
        }
        return (results[0], results[1])
    }

    mutating func free() {
        for number in made { BN_clear_free(number) }
        made = []
    }
}

/// A private key's fields, in place in its locked memory.
enum KeyFields {
    case ed25519(secretKey: UnsafeRawBufferPointer)
    case ecdsa(SSHCurve, point: UnsafeRawBufferPointer, scalar: UnsafeRawBufferPointer)
    case rsa(n: UnsafeRawBufferPointer, e: UnsafeRawBufferPointer, d: UnsafeRawBufferPointer,
             iqmp: UnsafeRawBufferPointer, p: UnsafeRawBufferPointer, q: UnsafeRawBufferPointer)

    init(_ reader: inout SSHWireReader) throws(AgentParseError) {
        let typeName = try reader.text(maximum: 64)
        guard let type = SSHKeyType(name: typeName) else { throw AgentParseError("unsupported key type \"\(typeName)\"") }
        switch type {
        case .ed25519:
            _ = try reader.stringBytes()
            let secretKey = try reader.stringBytes()
            guard secretKey.count == Int(crypto_sign_SECRETKEYBYTES) else { throw AgentParseError("an Ed25519 key of the wrong size") }
            self = .ed25519(secretKey: secretKey)
        case .ecdsa(let curve):
            _ = try reader.stringBytes()
            self = .ecdsa(curve, point: try reader.stringBytes(), scalar: try reader.positiveMPInt())
        case .rsa:
            self = .rsa(n: try reader.positiveMPInt(), e: try reader.positiveMPInt(), d: try reader.positiveMPInt(),
                        iqmp: try reader.positiveMPInt(), p: try reader.positiveMPInt(), q: try reader.positiveMPInt())
        }
    }
}

/// ECDSA signatures as OpenSSL gives and takes them: DER `SEQUENCE { INTEGER r, INTEGER s }`.
enum DERSignature {
    /// The DER of two non-negative integers given as big-endian magnitudes.
    static func encode(_ r: [UInt8], _ s: [UInt8]) -> [UInt8] {
        func length(_ count: Int) -> [UInt8] {
            count < 0x80 ? [UInt8(count)] : count < 0x100 ? [0x81, UInt8(count)] : [0x82, UInt8(count >> 8), UInt8(count & 0xff)]
        }
        func integer(_ magnitude: [UInt8]) -> [UInt8] {
            var value = Array(magnitude.drop { $0 == 0 })
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02] + length(value.count) + value
        }
        let body = integer(r) + integer(s)
        return [0x30] + length(body.count) + body
    }

    static func integers(_ der: [UInt8]) throws(SigningError) -> ([UInt8], [UInt8]) {
        var index = 0
        func length() throws(SigningError) -> Int {
            guard index < der.count else { throw SigningError("a short DER signature") }
            let first = Int(der[index])
            index += 1
            guard first & 0x80 != 0 else { return first }
            let count = first & 0x7f
            guard count >= 1, count <= 2, index + count <= der.count else { throw SigningError("a bad DER length") }
            var value = 0
            for _ in 0..<count {
                value = value << 8 | Int(der[index])
                index += 1
            }
            return value
        }
        func integer() throws(SigningError) -> [UInt8] {
            guard index < der.count, der[index] == 0x02 else { throw SigningError("a DER signature without an integer") }
            index += 1
            let count = try length()
            guard index + count <= der.count else { throw SigningError("a short DER signature") }
            defer { index += count }
            return Array(der[index..<(index + count)])
        }
        guard der.first == 0x30 else { throw SigningError("a DER signature without a sequence") }
        index = 1
        _ = try length()
        return (try integer(), try integer())
    }
}
