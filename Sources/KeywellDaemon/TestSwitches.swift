import KeywellCore

/// The environment variables test suites set to make keywelld quick to test: a cheap KDF, a
/// short throttle, a held-back name claim, a short call deadline (docs/contributing.md, "Test
/// switches"). Compiled only into test builds (`KEYWELL_TEST_SWITCHES`: debug builds, or a
/// release build made with `KEYWELL_TEST_SWITCHES=1` in the environment, see Package.swift):
/// whatever can set the activation environment of the user's bus must not make a shipped
/// keywelld's keychains cheap to guess. A release keywelld ignores every one of them.
enum TestSwitches {
    /// `KEYWELL_TEST_FAST_KDF=1`: libsodium's minimum Argon2id cost for keychains this daemon
    /// creates or re-wraps (suites create hundreds). Existing keychains always open with the
    /// cost stored in them.
    static func kdfParameters(_ environment: [String: String]) -> KDFParameters {
        value("KEYWELL_TEST_FAST_KDF", environment) == "1" ? .fastForTests : .default
    }

    /// `KEYWELL_TEST_THROTTLE_UNIT_MS=N`: the first delay after wrong passwords, instead of one second.
    static func throttleUnit(_ environment: [String: String]) -> Duration? {
        milliseconds("KEYWELL_TEST_THROTTLE_UNIT_MS", environment, minimum: 1).map { .milliseconds($0) }
    }

    /// `KEYWELL_TEST_CLAIM_DELAY_MS=N`: wait N ms (at most a minute) after connecting to a bus
    /// before claiming the name, holding the instance lock meanwhile. For the activation race.
    static func claimDelay(_ environment: [String: String]) -> Duration? {
        milliseconds("KEYWELL_TEST_CLAIM_DELAY_MS", environment, minimum: 1).map { .milliseconds(min($0, 60_000)) }
    }

    /// `KEYWELL_TEST_CALL_DEADLINE_MS=N` instead of `ServiceLimits.callDeadline` (0 makes every
    /// long call give up at its first check, which shows that it checks).
    static func callDeadline(_ environment: [String: String]) -> Duration? {
        milliseconds("KEYWELL_TEST_CALL_DEADLINE_MS", environment, minimum: 0).map { .milliseconds(min($0, 600_000)) }
    }

    private static func milliseconds(_ name: String, _ environment: [String: String], minimum: Int) -> Int? {
        guard let text = value(name, environment), let number = Int(text), number >= minimum else { return nil }
        return number
    }

    /// The one place the environment is read for a switch.
    private static func value(_ name: String, _ environment: [String: String]) -> String? {
        #if KEYWELL_TEST_SWITCHES
        environment[name]
        #else
        nil
        #endif
    }
}
