import Foundation
import KeywellCore
import KeywellProtocol

/// What `keywell login-unlock enable` leaves in the user's data folder
/// (`$XDG_DATA_HOME/keywell/login-unlock`, docs/login-unlock.md "The files"): the TPM's sealed
/// object and the master key wrapped under the key it seals. Nothing here opens anything
/// without the TPM that sealed it and the authorization value that only root keeps.
struct LoginUnlockEnrolment: Codable, Sendable, Equatable {
    static let currentVersion = 1

    var version: Int
    /// The identity of the `login` keychain it was made for.
    var keychain: UUID
    /// The TCTI configuration of the TPM that sealed it; empty for TSS2's default.
    var tcti: String
    var sealedPublic: Data
    var sealedPrivate: Data
    /// `SecondWrapping.sealed`: nonce ‖ ciphertext ‖ tag.
    var wrappedKey: Data
    /// The PCRs the sealed object is bound to, and the digest of their values at enrolment;
    /// absent when not bound (and in files from before the binding existed).
    var pcrs: LoginUnlockPCRs?
    var pcrDigest: Data?
    /// When a login found the bound PCRs changed (ISO 8601), so that `status` can say to
    /// enable again; absent while the binding holds.
    var bootStateChanged: String?

    var blob: TPMSeal.Blob {
        TPMSeal.Blob(publicArea: sealedPublic, privateArea: sealedPrivate, pcrs: pcrs ?? .none, pcrDigest: pcrDigest ?? Data())
    }
    var wrapping: SecondWrapping { SecondWrapping(keychain: keychain, sealed: wrappedKey) }

    init(tcti: String, blob: TPMSeal.Blob, wrapping: SecondWrapping) {
        version = Self.currentVersion
        keychain = wrapping.keychain
        self.tcti = tcti
        sealedPublic = blob.publicArea
        sealedPrivate = blob.privateArea
        wrappedKey = wrapping.sealed
        if blob.pcrs.isBound {
            pcrs = blob.pcrs
            pcrDigest = blob.pcrDigest
        }
    }

    /// The file's place: beside the keychains folder.
    static func path(in paths: KeywellPaths) -> String {
        paths.keychainsDirectory.deletingLastPathComponent().appendingPathComponent(KeywellNames.loginUnlockFile).path
    }

    /// nil when there is no file; `errSecDecode` for one that is not an enrolment of this version.
    static func load(from path: String) throws(KeychainError) -> LoginUnlockEnrolment? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard let enrolment = try? JSONDecoder().decode(LoginUnlockEnrolment.self, from: data),
              enrolment.version == currentVersion else {
            throw KeychainError(SecStatus.decode, detail: "\(path) is not a login unlock enrolment Keywell can read")
        }
        return enrolment
    }

    func save(to path: String) throws(KeychainError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else {
            throw KeychainError(SecStatus.io, detail: "cannot encode the login unlock enrolment")
        }
        try AtomicFile.write(data, to: path)
    }
}
