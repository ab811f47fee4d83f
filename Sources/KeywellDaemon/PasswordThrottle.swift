import Foundation
import KeywellProtocol

/// Slows down guessing of a keychain's password through the D-Bus API.
///
/// The first two wrong passwords for a keychain cost nothing (typos happen); from the third on,
/// each failure closes the keychain to password checks for a delay that doubles (1 s, 2 s, 4 s …,
/// capped at 30 s). Attempts inside the delay are answered `AuthFailed` at once, without looking
/// at the password, and the error's detail says how long to wait. Answering instead of sleeping
/// keeps worker threads free, so a guesser with many parallel calls cannot starve other clients,
/// and it still caps the guessing rate at one real check per delay. A right password resets the
/// count. The count is per keychain file and lives in memory only: a restarted daemon starts
/// again from zero (the Argon2id cost per check remains).
final class PasswordThrottle: @unchecked Sendable {
    /// Failures that cost nothing before delays start.
    static let freeFailures = 2
    static let maximumDelay: Duration = .seconds(30)
    /// How the detail of an attempt refused inside a delay begins.
    static let refusalPrefix = "too many wrong passwords for "

    /// An attempt refused inside a delay (no password was checked). The daemon logs these at
    /// debug level only, so a guesser cannot flood the log; the failure that starts each delay
    /// is logged at notice level.
    static func isRefusal(_ error: KeychainError) -> Bool {
        error.status == SecStatus.authFailed && error.detail?.hasPrefix(refusalPrefix) == true
    }

    private struct Record {
        var failures = 0
        var blockedUntil: ContinuousClock.Instant?
    }

    private let unit: Duration
    private let lock = NSLock()
    private var records: [String: Record] = [:]

    /// `unit` is the first delay; tests shorten it (`KEYWELL_TEST_THROTTLE_UNIT_MS`).
    init(unit: Duration = .seconds(1)) {
        self.unit = unit
    }

    /// From the daemon's environment: the test knob, else one second.
    convenience init(environment: [String: String]) {
        if let text = environment["KEYWELL_TEST_THROTTLE_UNIT_MS"], let milliseconds = Int(text), milliseconds > 0 {
            self.init(unit: .milliseconds(milliseconds))
        } else {
            self.init()
        }
    }

    /// The delay after `failures` wrong passwords in a row.
    func delay(afterFailures failures: Int) -> Duration {
        guard failures > Self.freeFailures else { return .zero }
        let doublings = min(failures - Self.freeFailures - 1, 16)
        return min(unit * (1 << doublings), Self.maximumDelay)
    }

    /// Throws `AuthFailed` (with the time left) while `keychain` is in a delay; `name` is how
    /// the caller named it.
    func checkAllowed(_ keychain: String, name: String) throws(KeychainError) {
        let now = ContinuousClock.now
        let blockedUntil = lock.withLock { records[keychain]?.blockedUntil }
        if let blockedUntil, blockedUntil > now {
            throw KeychainError(SecStatus.authFailed,
                                detail: "\(Self.refusalPrefix)\(name); try again in \(Self.text(blockedUntil - now))")
        }
    }

    /// Counts a wrong password and returns the delay it starts (zero for the free ones).
    func recordFailure(_ keychain: String) -> Duration {
        lock.withLock {
            var record = records[keychain] ?? Record()
            record.failures += 1
            let delay = delay(afterFailures: record.failures)
            record.blockedUntil = delay > .zero ? ContinuousClock.now + delay : nil
            records[keychain] = record
            return delay
        }
    }

    func recordSuccess(_ keychain: String) {
        _ = lock.withLock { records.removeValue(forKey: keychain) }
    }

    /// Runs a password check under the throttle: refused during a delay; a wrong password is
    /// counted and its error carries the delay it started. `keychain` identifies the file,
    /// `name` is what the messages call it.
    func check<T>(_ keychain: String, name: String, _ body: () throws(KeychainError) -> T) throws(KeychainError) -> T {
        try checkAllowed(keychain, name: name)
        do {
            let result = try body()
            recordSuccess(keychain)
            return result
        } catch where error.status == SecStatus.authFailed {
            let delay = recordFailure(keychain)
            guard delay > .zero else { throw error }
            throw KeychainError(SecStatus.authFailed,
                                detail: "wrong password for \(name); next attempt allowed in \(Self.text(delay))")
        }
    }

    static func text(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : String(format: "%.3f s", Double(milliseconds) / 1000)
    }
}
