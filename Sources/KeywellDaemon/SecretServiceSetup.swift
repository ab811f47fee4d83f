import Foundation
import KeywellCore
import KeywellProtocol
import KeywellSecretService
import KeywellSystem
import Logging

extension Daemon {
    /// The Secret Service over the daemon's store: prompts show the dialog `PrompterChoice`
    /// picks from the daemon's environment (docs/prompts.md) and check passwords under the store's guessing throttle; a keychain a prompt
    /// unlocks is treated like one the native `Unlock` opened (idle timer re-armed, a drifted
    /// login keychain re-wrapped to the login password); its calls count as activity for the
    /// idle memory trim, as native calls do. The user's last logout empties its in-memory
    /// `session` collection. Items are judged for each caller through the daemon's one access
    /// gate (docs/secret-service.md, "Access control").
    static func makeSecretService(
        store: KeychainStore, environment: [String: String], sessionDisplay: LearnedSessionDisplay, replaceOwner: Bool, autoLock: AutoLock,
        sessions: LoginSessions, trimmer: IdleTrimmer, access: SecretServiceAccess, logger: Logger
    ) -> SecretService {
        let configuration = SecretService.Configuration(
            environment: environment, sessionDisplay: sessionDisplay, replaceOwner: replaceOwner,
            keychainUnlocked: { keychain, password in
                autoLock.rearm()
                sessions.keychainUnlocked(keychain, with: password)
            },
            activity: { trimmer.noteActivity() }, deferredWorkDone: { trimmer.deferredWorkDone() }, access: access)
        let service = SecretService(store: store, configuration: configuration, logger: logger)
        sessions.onLastSessionClosed { [weak service] in service?.loginSessionsEnded() }
        sessions.onLoginPasswordQuestion { [weak service] loginPassword in
            service?.askToUpdateLoginKeychain(KeywellNames.loginKeychain, to: loginPassword) ?? .notAsked("keywelld is stopping")
        }
        return service
    }
}
