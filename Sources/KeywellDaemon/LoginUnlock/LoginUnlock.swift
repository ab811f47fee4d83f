import CKeywellControl
import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSystem
import Logging

/// The login keychain unlocked by a login without a typed password, through the TPM
/// (docs/login-unlock.md). `enable` wraps `login`'s master key a second time under a random key
/// and seals that key in the TPM under an authorization value that root keeps; at a login
/// without a password the PAM module hands the value over (`T`) and `unlock` unseals.
/// The password's wrapping is untouched throughout, so a password change needs nothing here.
final class LoginUnlock: Sendable {
    typealias Outcome = LoginSessions.Outcome

    private let store: KeychainStore
    private let logger: Logger
    /// Where the enrolment lives (`LoginUnlockEnrolment.path`).
    let enrolmentPath: String
    /// The daemon's own `KEYWELL_TPM_TCTI`, for an enrolment whose request named no TPM.
    private let environmentTCTI: String

    private static let login = KeywellNames.loginKeychain

    init(store: KeychainStore, environment: [String: String], logger: Logger) {
        self.store = store
        self.logger = logger
        enrolmentPath = LoginUnlockEnrolment.path(in: store.paths)
        environmentTCTI = environment[KeywellNames.tpmEnvironment] ?? ""
    }

    /// `E`: proves the login password (which unlocks `login`), seals a new wrapping key under
    /// `authValue` (bound to the current values of `pcrs`, as `0,7`, unless empty) and writes the
    /// enrolment. Without a TPM nothing is written.
    func enable(password: SecretBytes, authValue: SecretBytes, tcti requested: String, pcrs pcrText: String = "") -> Outcome {
        guard authValue.count == Int(KW_LOGIN_UNLOCK_VALUE_LENGTH) else {
            return Outcome(status: SecStatus.param, message: "the authorization value must be \(KW_LOGIN_UNLOCK_VALUE_LENGTH) bytes")
        }
        let pcrs: LoginUnlockPCRs
        do throws(LoginUnlockPCRs.Problem) {
            pcrs = try LoginUnlockPCRs(parsing: pcrText)
        } catch {
            return Outcome(status: SecStatus.param, message: error.text)
        }
        let tcti = requested.isEmpty ? environmentTCTI : requested
        do throws(KeychainError) {
            try store.locking.unlock(Self.login, password: password)
            let key = SecondWrapping.randomKey()
            let blob: TPMSeal.Blob
            do throws(TPMSeal.Failure) {
                blob = try TPMSeal(tcti: tcti).seal(key, auth: authValue, pcrs: pcrs)
            } catch {
                logger.notice("login unlock not enabled: \(error.message)")
                return Outcome(status: SecStatus.notAvailable, message: "no usable TPM: \(error.message)")
            }
            let wrapping = try store.locking.secondWrapping(Self.login, under: key)
            try LoginUnlockEnrolment(tcti: tcti, blob: blob, wrapping: wrapping).save(to: enrolmentPath)
            logger.info("login unlock through the TPM enabled\(pcrs.isBound ? ", bound to PCRs \(pcrs.text)" : "")")
            return .ok("enabled")
        } catch {
            if error.status != SecStatus.authFailed { logger.error("cannot enable the login unlock: \(error.wireMessage)") }
            return Outcome(error)
        }
    }

    /// `D`: forgets the enrolment (the sealed object and the second wrapping).
    func disable() -> Outcome {
        if unlink(enrolmentPath) == 0 {
            logger.info("login unlock through the TPM disabled")
            return .ok("disabled")
        }
        if Errno.current == .noEntry { return .ok("was not enabled") }
        let reason = Errno.current.description
        logger.error("cannot remove \(enrolmentPath): \(reason)")
        return Outcome(status: SecStatus.io, message: "cannot remove the enrolment: \(reason)")
    }

    /// The unlock part of `T` (the session is counted by the caller): unseal with the value root
    /// sent and open `login` with the key it gives. Every failure leaves `login` locked.
    func unlock(authValue: SecretBytes) -> Outcome {
        do throws(KeychainError) {
            guard let enrolment = try LoginUnlockEnrolment.load(from: enrolmentPath) else {
                return Outcome(status: SecStatus.notAvailable, message: "login unlock is not enabled for this user")
            }
            guard try store.locking.isLocked(Self.login) else { return .ok("login is already unlocked") }
            let key: SecretBytes
            do throws(TPMSeal.Failure) {
                key = try TPMSeal(tcti: enrolment.tcti.isEmpty ? environmentTCTI : enrolment.tcti).unseal(enrolment.blob, auth: authValue)
            } catch where error.kind == .bootStateChanged {
                bootStateChanged(enrolment)
                return Outcome(status: SecStatus.authFailed, message: "the TPM did not unseal: \(error.message)")
            } catch {
                logger.notice("login stays locked: the TPM did not unseal: \(error.message)")
                let status = error.kind == .unreachable ? SecStatus.notAvailable : SecStatus.authFailed
                return Outcome(status: status, message: "the TPM did not unseal: \(error.message)")
            }
            try store.locking.unlock(Self.login, wrapping: enrolment.wrapping, key: key)
            logger.info("unlocked login at login through the TPM")
            if enrolment.bootStateChanged != nil {
                // Booted back into the state it was bound to: the note no longer holds.
                var cleared = enrolment
                cleared.bootStateChanged = nil
                try? cleared.save(to: enrolmentPath)
            }
            return .ok("login unlocked through the TPM")
        } catch {
            logger.notice("login stays locked: \(error.wireMessage)")
            return Outcome(error)
        }
    }

    /// A firmware, boot loader or kernel update (or another system booted) changed a bound PCR:
    /// the object stays sealed until `enable` seals again to the new values. Logged, and noted
    /// in the enrolment so that `keywell login-unlock status` can tell the user.
    private func bootStateChanged(_ enrolment: LoginUnlockEnrolment) {
        let pcrs = enrolment.pcrs?.text ?? "?"
        let why = "login stays locked: the boot state changed since login unlock was enabled (PCR \(pcrs) differ: "
            + "a firmware, boot loader or kernel update?); run `sudo keywell login-unlock enable` again"
        logger.notice("\(why)")
        guard enrolment.bootStateChanged == nil else { return }
        var marked = enrolment
        marked.bootStateChanged = Date().formatted(.iso8601)
        do throws(KeychainError) {
            try marked.save(to: enrolmentPath)
        } catch {
            logger.error("cannot note the changed boot state in \(enrolmentPath): \(error.wireMessage)")
        }
    }
}
