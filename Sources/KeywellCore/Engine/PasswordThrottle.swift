import Foundation
import KeywellProtocol
import KeywellSystem

/// Slows down guessing of a keychain's password, whichever way the guesses come: the native
/// `Unlock` and `ChangePassword`, the PAM module's control socket (`O`, `P`) and the Secret
/// Service's unlock prompt all check passwords through one instance, the one the store owns:
/// `KeychainStore.locking`'s `unlock(_:password:)` and `changePassword` run under it, so a
/// front end cannot forget it (docs/decisions.md, "The engine's calls grouped by capability").
///
/// The first two wrong passwords for a keychain cost nothing (typos happen); from the third on,
/// each failure closes the keychain to password checks for a delay that doubles (1 s, 2 s, 4 s …,
/// capped at 30 s). Attempts inside the delay are answered `AuthFailed` at once, without looking
/// at the password, and the error's detail says how long to wait. Answering instead of sleeping
/// keeps worker threads free, so a guesser with many parallel calls cannot starve other clients,
/// a login never waits on it, and it still caps the guessing rate at one real check per delay.
/// A right password resets the count.
///
/// The count belongs to the keychain's identity (`KeychainStore.keychainIdentity`), not to its
/// path: copies of a file, under any names, share one count. It lives in memory only: a
/// restarted daemon starts again from zero (the Argon2id cost per check remains).
public final class PasswordThrottle: Sendable {
    /// Failures that cost nothing before delays start.
    public static let freeFailures = 2
    public static let maximumDelay: Duration = .seconds(30)
    /// The first delay; test builds of keywelld shorten it (`KEYWELL_TEST_THROTTLE_UNIT_MS`).
    public static let defaultUnit: Duration = .seconds(1)
    /// How the detail of an attempt refused inside a delay begins.
    public static let refusalPrefix = "too many wrong passwords for "
    /// How the detail of a wrong password that starts a delay names it.
    public static let nextAttemptText = "next attempt allowed in "

    /// An attempt refused inside a delay (no password was checked). The daemon logs these at
    /// debug level only, so a guesser cannot flood the log; the failure that starts each delay
    /// is logged at notice level.
    public static func isRefusal(_ error: KeychainError) -> Bool {
        error.status == SecStatus.authFailed && error.detail?.hasPrefix(refusalPrefix) == true
    }

    private struct Record {
        var failures = 0
        var blockedUntil: ContinuousClock.Instant?
    }

    private let unit: Duration
    private let records = Protected<[UUID: Record]>([:])

    /// `unit` is the first delay.
    public init(unit: Duration = PasswordThrottle.defaultUnit) {
        self.unit = unit
    }

    /// The delay after `failures` wrong passwords in a row.
    public func delay(afterFailures failures: Int) -> Duration {
        guard failures > Self.freeFailures else { return .zero }
        let doublings = min(failures - Self.freeFailures - 1, 16)
        return min(unit * (1 << doublings), Self.maximumDelay)
    }

    /// Runs a password check under the throttle of the keychain whose identity is `keychain`:
    /// refused during a delay; a wrong password is counted and its error carries the delay it
    /// started. `name` is what the messages call the keychain.
    func check<T>(_ keychain: UUID, name: String, _ body: () throws(KeychainError) -> T) throws(KeychainError) -> T {
        try checkAllowed(keychain, name: name)
        do {
            let result = try body()
            recordSuccess(keychain)
            return result
        } catch where error.status == SecStatus.authFailed {
            let delay = recordFailure(keychain)
            guard delay > .zero else { throw error }
            throw KeychainError(SecStatus.authFailed,
                                detail: "wrong password for \(name); \(Self.nextAttemptText)\(Self.text(delay))")
        }
    }

    /// `KeychainStore.unlock` under the throttle.
    func unlock(_ nameOrPath: String, password: SecretBytes, in store: KeychainStore) throws(KeychainError) {
        try check(store.keychainIdentity(nameOrPath), name: nameOrPath) { () throws(KeychainError) in
            try store.unlock(nameOrPath, password: password)
        }
    }

    /// `KeychainStore.changePassword` under the throttle (the old password is the one checked).
    func changePassword(_ nameOrPath: String, old: SecretBytes, new: SecretBytes, byLogin: Bool = false,
                               in store: KeychainStore) throws(KeychainError) {
        try check(store.keychainIdentity(nameOrPath), name: nameOrPath) { () throws(KeychainError) in
            try store.changePassword(nameOrPath, old: old, new: new, byLogin: byLogin)
        }
    }

    /// Throws `AuthFailed` (with the time left) while `keychain` is in a delay.
    func checkAllowed(_ keychain: UUID, name: String) throws(KeychainError) {
        let now = ContinuousClock.now
        let blockedUntil = records.withLock { $0[keychain]?.blockedUntil }
        if let blockedUntil, blockedUntil > now {
            throw KeychainError(SecStatus.authFailed,
                                detail: "\(Self.refusalPrefix)\(name); try again in \(Self.text(blockedUntil - now))")
        }
    }

    /// Counts a wrong password and returns the delay it starts (zero for the free ones).
    func recordFailure(_ keychain: UUID) -> Duration {
        records.withLock { records in
            var record = records[keychain] ?? Record()
            record.failures += 1
            let delay = delay(afterFailures: record.failures)
            record.blockedUntil = delay > .zero ? ContinuousClock.now + delay : nil
            records[keychain] = record
            return delay
        }
    }

    func recordSuccess(_ keychain: UUID) {
        _ = records.withLock { $0.removeValue(forKey: keychain) }
    }

    public static func text(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : String(format: "%.3f s", Double(milliseconds) / 1000)
    }
}
