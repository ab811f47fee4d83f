import CKeywellTPM
import Foundation
import KeywellCore
import KeywellProtocol

/// The TPM's part of the login unlock (docs/login-unlock.md, "In the TPM"): a 32-byte secret
/// sealed under an authorization value, in the TPM that a TCTI configuration names. Each call
/// connects, works and disconnects; the C side (CKeywellTPM) wipes its copies.
struct TPMSeal: Sendable {
    /// Why the TPM did not do it.
    struct Failure: Error, Sendable {
        /// `bootStateChanged`: a bound PCR no longer holds its value at sealing (an update).
        enum Kind: Sendable { case unreachable, refused, failed, bootStateChanged }
        var kind: Kind
        var message: String
    }

    /// The sealed object as stored: the marshalled public and private areas, and for an object
    /// bound to the boot state the PCRs and the digest of their values at sealing.
    struct Blob: Sendable, Equatable {
        var publicArea: Data
        var privateArea: Data
        var pcrs = LoginUnlockPCRs.none
        var pcrDigest = Data()
    }

    /// A TCTI configuration string (`swtpm:host=127.0.0.1,port=2321`, `device:/dev/tpmrm0`);
    /// empty for TSS2's default loader.
    var tcti: String

    static let secretLength = Int(KW_TPM_MAX_SECRET)

    /// Seals `secret` under `auth`, bound to the current values of `pcrs` unless that is empty.
    func seal(_ secret: SecretBytes, auth: SecretBytes, pcrs: LoginUnlockPCRs = .none) throws(Failure) -> Blob {
        let blob = UnsafeMutablePointer<kw_tpm_blob>.allocate(capacity: 1)
        defer { blob.deallocate() }
        var error = [CChar](repeating: 0, count: Int(KW_TPM_MAX_ERROR))
        let result = auth.withUnsafeBytes { authBytes in
            secret.withUnsafeBytes { secretBytes in
                kw_tpm_seal(tcti, authBytes.bindMemory(to: UInt8.self).baseAddress, authBytes.count,
                            secretBytes.bindMemory(to: UInt8.self).baseAddress, secretBytes.count, pcrs.mask, blob, &error)
            }
        }
        try Self.check(result, error)
        let stored = blob.pointee
        return Blob(publicArea: Self.bytes(of: stored.public_area, count: stored.public_length),
                    privateArea: Self.bytes(of: stored.private_area, count: stored.private_length),
                    pcrs: pcrs, pcrDigest: Self.bytes(of: stored.pcr_digest, count: stored.pcr_digest_length))
    }

    func unseal(_ sealed: Blob, auth: SecretBytes) throws(Failure) -> SecretBytes {
        guard sealed.publicArea.count <= Int(KW_TPM_MAX_BLOB), sealed.privateArea.count <= Int(KW_TPM_MAX_BLOB),
              sealed.pcrDigest.count <= Int(KW_TPM_MAX_SECRET) else {
            throw Failure(kind: .refused, message: "the sealed object is too large")
        }
        let blob = UnsafeMutablePointer<kw_tpm_blob>.allocate(capacity: 1)
        defer { blob.deallocate() }
        blob.initialize(to: kw_tpm_blob())
        _ = withUnsafeMutableBytes(of: &blob.pointee.public_area) { sealed.publicArea.copyBytes(to: $0) }
        _ = withUnsafeMutableBytes(of: &blob.pointee.private_area) { sealed.privateArea.copyBytes(to: $0) }
        blob.pointee.public_length = sealed.publicArea.count
        blob.pointee.private_length = sealed.privateArea.count
        _ = withUnsafeMutableBytes(of: &blob.pointee.pcr_digest) { sealed.pcrDigest.copyBytes(to: $0) }
        blob.pointee.pcr_digest_length = sealed.pcrDigest.count
        blob.pointee.pcr_mask = sealed.pcrs.mask
        let secret = SecretBytes(count: Self.secretLength)
        var length = 0
        var error = [CChar](repeating: 0, count: Int(KW_TPM_MAX_ERROR))
        let result = auth.withUnsafeBytes { authBytes in
            secret.withUnsafeMutableBytes { out in
                kw_tpm_unseal(tcti, authBytes.bindMemory(to: UInt8.self).baseAddress, authBytes.count, blob,
                              out.bindMemory(to: UInt8.self).baseAddress, &length, &error)
            }
        }
        try Self.check(result, error)
        guard length == Self.secretLength else { throw Failure(kind: .refused, message: "the sealed secret has the wrong size") }
        return secret
    }

    private static func check(_ result: kw_tpm_result, _ error: [CChar]) throws(Failure) {
        let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        switch result {
        case KW_TPM_OK: return
        case KW_TPM_UNREACHABLE: throw Failure(kind: .unreachable, message: message)
        case KW_TPM_REFUSED: throw Failure(kind: .refused, message: message)
        case KW_TPM_BOOT_STATE_CHANGED: throw Failure(kind: .bootStateChanged, message: message)
        default: throw Failure(kind: .failed, message: message)
        }
    }

    private static func bytes<T>(of tuple: T, count: Int) -> Data {
        withUnsafeBytes(of: tuple) { Data($0.prefix(count)) }
    }
}
