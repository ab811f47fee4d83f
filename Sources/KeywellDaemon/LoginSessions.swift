import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSecretService
import KeywellSystem
import Logging

/// What the PAM module tells the daemon (docs/control-protocol.md §3): sessions counted as
/// opens minus closes, the login keychain unlocked or created at login and locked at the last
/// logout, and its password changed with the login password.
///
/// Drift (the keychain's password is not the login password any more, e.g. root reset it): the
/// login password is kept, in locked memory, until the user unlocks `login` with its old
/// password through D-Bus or a prompt; that unlock re-wraps the keychain to the login password
/// (macOS's "Update Keychain Password") and drops it. The last logout drops it too. Only a
/// password from root is kept: the PAM module runs as root and sends a password only after the
/// PAM stack accepted it, while any process of the user could send any password and so choose
/// what `login` gets re-wrapped to (docs/control-protocol.md §3).
///
/// A password the user changed on purpose (`LoginPasswordLink.changedOnPurpose`: Seahorse,
/// `set-keychain-password`) is never re-wrapped silently: the login goes on with `login` locked
/// and the user is asked in the session, on a thread of its own, whether to update it to the
/// login password or keep it separate (docs/login-unlock.md, "When the keychain's password is
/// not the login password").
///
/// Every password check goes through `store.locking`, so under the store's `PasswordThrottle`,
/// like the native `Unlock`;
/// inside a guessing delay `O` is answered at once and the login goes on with `login` locked.
final class LoginSessions: Sendable {
    /// Who sent a control request, by `SO_PEERCRED`.
    enum Sender: Sendable, Equatable {
        /// uid 0: the login process (the PAM module), which vouches for the password.
        case root
        /// One of the user's own processes, which vouches for nothing.
        case user
    }

    struct Outcome: Sendable {
        var status: OSStatus
        var message: String
        static func ok(_ message: String = "") -> Outcome { Outcome(status: SecStatus.success, message: message) }
        init(status: OSStatus, message: String) {
            self.status = status
            self.message = message
        }
        init(_ error: KeychainError) { self.init(status: error.status, message: error.wireMessage) }
    }

    private let store: KeychainStore
    private let autoLock: AutoLock
    private let logger: Logger
    /// One control request at a time: two logins at once must not both create `login`.
    private let serial = Protected(())
    private let state = Protected(SessionState())

    private struct SessionState {
        var openSessions = 0
        var driftedLoginPassword: SecretBytes?
        var lastSessionClosed: [@Sendable () -> Void] = []
        var loginPasswordHandler: (@Sendable (SecretBytes) -> Void)?
        var question: (@Sendable (SecretBytes) -> LoginPasswordDecision)?
        /// The login password a question is being asked about (one asking thread at a time).
        var asking: SecretBytes?
    }

    /// How long, and how often, a question that cannot be shown yet (no display before the
    /// desktop starts) is tried again while the session lasts.
    static let questionRetry = Duration.seconds(3)
    static let questionTries = 600

    private static let login = KeywellNames.loginKeychain

    init(store: KeychainStore, autoLock: AutoLock, logger: Logger) {
        self.store = store
        self.autoLock = autoLock
        self.logger = logger
    }

    var sessionCount: Int { state.withLock { $0.openSessions } }

    /// Adds what runs when a close leaves no session open (the Secret Service forgets its
    /// in-memory `session` collection then, access control every Allow); on the control
    /// request's thread, before the answer goes out.
    func onLastSessionClosed(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.lastSessionClosed.append(handler) }
    }

    /// Runs (it must not block: it starts its own work) when a password sent with `O` opened
    /// or created `login`, or found it unlocked: the keyring migration (docs/migration.md).
    func onLoginPassword(_ handler: @escaping @Sendable (SecretBytes) -> Void) {
        state.withLock { $0.loginPasswordHandler = handler }
    }

    /// How the question about a password changed on purpose is asked (the Secret Service's dialog).
    func onLoginPasswordQuestion(_ ask: @escaping @Sendable (SecretBytes) -> LoginPasswordDecision) {
        state.withLock { $0.question = ask }
    }

    // MARK: Control requests

    /// `O`: one more session; with a password, unlock `login` or create it.
    func openSession(password: SecretBytes?, from sender: Sender) -> Outcome {
        let outcome = openSessionSerially(password: password, from: sender)
        if let password, outcome.status == SecStatus.success, let handler = state.withLock({ $0.loginPasswordHandler }) {
            handler(password)
        }
        return outcome
    }

    private func openSessionSerially(password: SecretBytes?, from sender: Sender) -> Outcome {
        serial.withLock { _ -> Outcome in
            let count = state.withLock { state -> Int in
                state.openSessions += 1
                return state.openSessions
            }
            logger.info("session opened (\(count) open)")
            // Every outcome is logged: a login whose keychain stayed as it was must say why.
            guard let password else {
                logger.info("no password came with the session; login left as it is")
                return .ok("session counted")
            }
            let started = ContinuousClock.now
            do throws(KeychainError) {
                guard try store.locking.isLocked(Self.login) else {
                    logger.info("login is already unlocked")
                    return .ok("login is already unlocked")
                }
                try store.locking.unlock(Self.login, password: password)
                autoLock.rearm()
                state.withLock { $0.driftedLoginPassword = nil }
                // The login password opens it: whatever was chosen before, it follows the login again.
                if (try? store.locking.loginPasswordLink(Self.login)) != .follows { try? store.locking.setLoginPasswordLink(Self.login, .follows) }
                logger.info("unlocked login at login (\(Self.seconds(since: started)))")
                return .ok("login unlocked")
            } catch let error where error.status == SecStatus.noSuchKeychain {
                return createLoginKeychain(password: password, started: started)
            } catch let error where error.status == SecStatus.authFailed {
                return loginStaysLocked(error, loginPassword: password, from: sender)
            } catch {
                logger.error("cannot unlock login at login: \(error.wireMessage)")
                return Outcome(error)
            }
        }
    }

    /// `T`: one more session, then `login` unlocked through the TPM with the authorization value
    /// root sent (docs/login-unlock.md, "At login"). The session counts whatever happens next.
    func openSession(tpmAuthorization authValue: SecretBytes, unlocking loginUnlock: LoginUnlock) -> Outcome {
        serial.withLock { _ -> Outcome in
            let count = state.withLock { state -> Int in
                state.openSessions += 1
                return state.openSessions
            }
            logger.info("session opened without a password (\(count) open)")
            let outcome = loginUnlock.unlock(authValue: authValue)
            if outcome.status == SecStatus.success { autoLock.rearm() }
            return outcome
        }
    }

    /// `O` whose password did not open `login` (wrong, or not checked inside a guessing delay).
    private func loginStaysLocked(_ error: KeychainError, loginPassword: SecretBytes, from sender: Sender) -> Outcome {
        let refused = PasswordThrottle.isRefusal(error)
        guard sender == .root else {
            if !refused { logger.notice("a process of the user sent a password that does not open login; ignored") }
            return Outcome(error)
        }
        switch (try? store.locking.loginPasswordLink(Self.login)) ?? .follows {
        case .follows: break
        case .separate:
            logger.notice("login stays locked: the user chose to keep its password separate from the login password")
            return Outcome(status: error.status, message: "the login keychain keeps a password of its own, as the user chose")
        case .changedOnPurpose:
            state.withLock { $0.driftedLoginPassword = loginPassword }
            askAboutPasswordChangedOnPurpose(loginPassword)
            logger.notice("login stays locked: its password was changed on purpose; asking the user whether to update it")
            return Outcome(status: error.status, message:
                "the login keychain's password was changed on purpose; the user is asked whether to update it")
        }
        state.withLock { $0.driftedLoginPassword = loginPassword }
        if refused {
            logger.notice("login stays locked: \(error.wireMessage)")
            return Outcome(error)
        }
        logger.notice("the login keychain has a different password than the login; it stays locked")
        return Outcome(status: error.status, message:
            "the login keychain's password is not the login password; unlock it once with its own password to update it")
    }

    /// `C`: one session less; the last one locks `login`.
    func closeSession() -> Outcome {
        serial.withLock { _ -> Outcome in
            let remaining = state.withLock { state -> Int in
                state.openSessions = max(0, state.openSessions - 1)
                if state.openSessions == 0 { state.driftedLoginPassword = nil }
                return state.openSessions
            }
            logger.info("session closed (\(remaining) open)")
            guard remaining == 0 else { return .ok("\(remaining) sessions still open") }
            for handler in state.withLock({ $0.lastSessionClosed }) { handler() }
            // Logout ends AfterFirstUnlock in every keychain, not only in login.
            store.locking.dropSessionSecrets()
            do throws(KeychainError) {
                try store.locking.lock(Self.login)
                return .ok("login locked")
            } catch let error where error.status == SecStatus.noSuchKeychain {
                return .ok("no login keychain to lock")
            } catch {
                logger.error("cannot lock login at logout: \(error.wireMessage)")
                return Outcome(error)
            }
        }
    }

    /// `P`: re-wrap `login` from the old login password to the new one.
    func changePassword(old: SecretBytes, new: SecretBytes, from sender: Sender) -> Outcome {
        serial.withLock { _ -> Outcome in
            do throws(KeychainError) {
                try store.locking.changePassword(Self.login, old: old, new: new, byLogin: true)
                state.withLock { $0.driftedLoginPassword = nil }
                logger.info("login keychain password changed with the login password")
                return .ok("login re-wrapped")
            } catch let error where error.status == SecStatus.authFailed {
                // From root: already drifted, the keychain keeps an older password; remember the new one.
                if sender == .root { state.withLock { $0.driftedLoginPassword = new } }
                if !PasswordThrottle.isRefusal(error) {
                    logger.notice("the login keychain's password was not the old login password; not changed")
                }
                return Outcome(error)
            } catch {
                if error.status != SecStatus.noSuchKeychain {
                    logger.error("cannot change the login keychain's password: \(error.wireMessage)")
                }
                return Outcome(error)
            }
        }
    }

    // MARK: From the native API

    /// After a successful `Unlock` through D-Bus or a prompt: if `login` has drifted from the
    /// login password root sent, the password that just opened it (the old one, now proven)
    /// re-wraps it to that login password.
    func keychainUnlocked(_ keychain: String, with password: SecretBytes) {
        guard let loginPassword = state.withLock({ $0.driftedLoginPassword }) else { return }
        guard (try? store.locking.info(keychain)[KeychainInfoKey.isLogin]) == .bool(true) else { return }
        // A password changed on purpose is re-wrapped only when the user says so (the question).
        guard (try? store.locking.loginPasswordLink(Self.login)) == .follows else { return }
        do throws(KeychainError) {
            try store.locking.changePasswordWithProvenPassword(Self.login, old: password, new: loginPassword, byLogin: true)
            state.withLock { if $0.driftedLoginPassword === loginPassword { $0.driftedLoginPassword = nil } }
            logger.notice("updated the login keychain's password to the login password")
        } catch {
            logger.error("cannot update the login keychain's password: \(error.wireMessage)")
        }
    }

    // MARK: A password changed on purpose

    /// Asks on a thread of its own (the login is already answered): at once when a dialog can be
    /// shown, else again every few seconds until one can (the desktop starts after the login),
    /// the session ends, or the question is moot.
    private func askAboutPasswordChangedOnPurpose(_ loginPassword: SecretBytes) {
        let start = state.withLock { state -> Bool in
            guard state.question != nil, state.asking == nil else { return false }
            state.asking = loginPassword
            return true
        }
        guard start else { return }
        Thread.detachNewThread { [self] in
            defer { state.withLock { $0.asking = nil } }
            askUntilAnswered(loginPassword)
        }
    }

    private func askUntilAnswered(_ loginPassword: SecretBytes) {
        var toldWhy = false
        for _ in 0..<Self.questionTries {
            let ask = state.withLock { state -> (@Sendable (SecretBytes) -> LoginPasswordDecision)? in
                state.openSessions > 0 && state.driftedLoginPassword === loginPassword ? state.question : nil
            }
            guard let ask, (try? store.locking.loginPasswordLink(Self.login)) == .changedOnPurpose else { return }
            switch ask(loginPassword) {
            case .updated:
                autoLock.rearm()
                state.withLock { if $0.driftedLoginPassword === loginPassword { $0.driftedLoginPassword = nil } }
                logger.notice("the user updated the login keychain's password to the login password; login unlocked")
                return
            case .keptSeparate:
                state.withLock { if $0.driftedLoginPassword === loginPassword { $0.driftedLoginPassword = nil } }
                do throws(KeychainError) {
                    try store.locking.setLoginPasswordLink(Self.login, .separate)
                    logger.notice("the user keeps the login keychain's password separate from the login password")
                } catch {
                    logger.error("cannot record that the login keychain keeps its own password: \(error.wireMessage)")
                }
                return
            case .unanswered(let why):
                logger.notice("the question about the login keychain's password was not answered (\(why)); asked again at the next login")
                return
            case .notAsked(let why):
                if !toldWhy {
                    logger.notice("cannot ask about the login keychain's password yet (\(why)); asking once a dialog can be shown")
                    toldWhy = true
                }
                Thread.sleep(forTimeInterval: Double(Self.questionRetry.components.seconds))
            }
        }
    }

    /// How long a password check took, for the log: Argon2id under load can outlast the PAM
    /// module's wait (docs/control-protocol.md, "Timing"), and the log should show it.
    private static func seconds(since start: ContinuousClock.Instant) -> String {
        let elapsed = ContinuousClock.now - start
        let milliseconds = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        return "\(milliseconds / 1000).\(String(format: "%03d", Int(milliseconds % 1000))) s"
    }

    // MARK: First login

    private func createLoginKeychain(password: SecretBytes, started: ContinuousClock.Instant) -> Outcome {
        do throws(KeychainError) {
            _ = try store.registry.createKeychain(Self.login, password: password)
            logger.info("created the login keychain at the first login (\(Self.seconds(since: started)))")
        } catch {
            logger.error("cannot create the login keychain: \(error.wireMessage)")
            return Outcome(error)
        }
        do throws(KeychainError) {
            // The default and the search list as macOS has them after a first login. A keychain
            // a first store made before this login stops being the default: it would be locked
            // after every login (docs/secret-service.md, "First store").
            let current = try? store.registry.defaultKeychain()
            // Read before the default changes: a list that follows the default keeps the old one in it.
            let list = try store.registry.searchList()
            if let current, (try? store.locking.isFirstStoreKeychain(current)) == true {
                try store.registry.setDefaultKeychain(Self.login)
                logger.notice("login is the default keychain now, in place of \"\(current)\" that a first store made before it")
            } else if current == nil {
                try store.registry.setDefaultKeychain(Self.login)
            }
            if !list.contains(Self.login) { try store.registry.setSearchList([Self.login] + list) }
        } catch {
            logger.error("created login, but cannot make it the default: \(error.wireMessage)")
            return Outcome(error)
        }
        return .ok("login created")
    }
}
