import Foundation
import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

@testable import KeywellDaemon

/// Wrong passwords through Unlock and ChangePassword are slowed down: free for two, then delays
/// that double, refused without a check inside a delay, reset by a right password.
@Suite struct PasswordThrottleTests {
    @Test func theScheduleDoublesFromTheThirdFailureUpToThirtySeconds() {
        let throttle = PasswordThrottle(unit: .seconds(1))
        #expect(throttle.delay(afterFailures: 1) == .zero)
        #expect(throttle.delay(afterFailures: 2) == .zero)
        #expect(throttle.delay(afterFailures: 3) == .seconds(1))
        #expect(throttle.delay(afterFailures: 4) == .seconds(2))
        #expect(throttle.delay(afterFailures: 7) == .seconds(16))
        #expect(throttle.delay(afterFailures: 8) == .seconds(30))
        #expect(throttle.delay(afterFailures: 500) == .seconds(30))
    }

    @Test func tenPacedWrongPasswordsTakeTheSumOfTheDelaysAndTheRightOneWorksAfter() throws {
        let unitMilliseconds = 40
        let fixture = try DaemonFixture(environment: ["KEYWELL_TEST_THROTTLE_UNIT_MS": "\(unitMilliseconds)"])
        try fixture.createKeychain("guarded", password: "right")
        try fixture.call("Lock", ["guarded"])

        let start = ContinuousClock.now
        var wait = Duration.zero
        var messages: [String] = []
        for attempt in 0..<10 {
            Thread.sleep(forTimeInterval: seconds(wait) + 0.002)
            do {
                try fixture.call("Unlock", ["guarded", secret("guess \(attempt)")])
                Issue.record("a wrong password unlocked")
            } catch {
                #expect(error.name == KeywellNames.errorPrefix + "AuthFailed")
                messages.append(error.message)
            }
            wait = PasswordThrottle(unit: .milliseconds(unitMilliseconds)).delay(afterFailures: attempt + 1)
        }
        let elapsed = ContinuousClock.now - start
        let sum = (3..<10).reduce(Duration.zero) { $0 + .milliseconds(unitMilliseconds) * (1 << ($1 - 3)) }
        #expect(elapsed >= sum)
        #expect(!messages[1].contains("next attempt"), "the first two failures cost nothing")
        #expect(messages[2].contains("next attempt allowed in 0.040 s"))
        #expect(messages[9].contains("next attempt allowed in"))

        // Inside the delay even the right password is refused without a check, and says how long.
        expectKeychainError("AuthFailed", SecStatus.authFailed) { try fixture.call("Unlock", ["guarded", secret("right")]) }
        // Other calls and other clients are not held up meanwhile.
        #expect(try fixture.info("guarded")["locked"] == .bool(true))

        Thread.sleep(forTimeInterval: seconds(wait) + 0.01)
        try fixture.call("Unlock", ["guarded", secret("right")])
        #expect(try fixture.info("guarded")["locked"] == .bool(false))
        // The delay is in the log too.
        #expect(fixture.daemonLog.contains("next attempt allowed in"))

        // The right password reset the count: two failures are free again.
        try fixture.call("Lock", ["guarded"])
        for _ in 0..<2 {
            expectKeychainError("AuthFailed", SecStatus.authFailed) { try fixture.call("Unlock", ["guarded", secret("nope")]) }
        }
        try fixture.call("Unlock", ["guarded", secret("right")])
    }

    @Test func changePasswordIsThrottledLikeUnlockAndTheRefusalSaysWhenToRetry() throws {
        let fixture = try DaemonFixture(environment: ["KEYWELL_TEST_THROTTLE_UNIT_MS": "5000"])
        try fixture.createKeychain("cp", password: "right")
        for _ in 0..<3 {
            expectKeychainError("AuthFailed", SecStatus.authFailed) {
                try fixture.call("ChangePassword", ["cp", secret("bad"), secret("new")])
            }
        }
        do {
            try fixture.call("Unlock", ["cp", secret("right")])
            Issue.record("a check ran inside the delay")
        } catch {
            #expect(error.message.contains("too many wrong passwords for cp; try again in"))
        }
    }
}

private func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
