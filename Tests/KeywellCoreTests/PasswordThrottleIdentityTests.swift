import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

/// The guessing throttle counts per keychain identity (the header's), not per path: copies of a
/// file share one count, other keychains keep their own. The store owns it: password checks
/// through `store.locking` run under it.
@Suite struct PasswordThrottleIdentityTests {
    /// Long enough that a delay it starts is still running when the test looks.
    private let unit = Duration.seconds(600)

    @Test func copiesOfAKeychainShareTheIdentityAndTheCount() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["original", "other"], throttleUnit: unit)
        try store.lock("original")
        try store.lock("other")
        let outside = environment.root.appendingPathComponent("elsewhere/copy.keychain-db").path
        try FileManager.default.createDirectory(atPath: (outside as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        for destination in [environment.path(of: "copy"), outside] {
            try FileManager.default.copyItem(atPath: environment.path(of: "original"), toPath: destination)
            chmod(destination, 0o600)
        }
        let identity = try store.keychainIdentity("original")
        #expect(try store.keychainIdentity("copy") == identity)
        #expect(try store.keychainIdentity(outside) == identity)
        #expect(try store.keychainIdentity("other") != identity)

        // One wrong password through each name: the third starts the delay for all of them.
        for name in ["original", "copy", outside] {
            #expect(throws: KeychainError.self) { try store.locking.unlock(name, password: secret("guess")) }
        }
        for name in ["original", "copy", outside] {
            let refused = try #require(throws: KeychainError.self) { try store.locking.unlock(name, password: secret("pw")) }
            #expect(PasswordThrottle.isRefusal(refused), "\(name) was checked inside the delay")
        }
        #expect(try store.isLocked("copy"))

        // A keychain of another identity is not held up: its wrong passwords are checked, its right one opens it.
        for _ in 0..<PasswordThrottle.freeFailures {
            let wrong = try #require(throws: KeychainError.self) { try store.locking.unlock("other", password: secret("guess")) }
            #expect(!PasswordThrottle.isRefusal(wrong))
        }
        try store.locking.unlock("other", password: secret("pw"))
        #expect(try !store.isLocked("other"))
    }

    @Test func changePasswordCountsAgainstTheSameIdentityAsUnlock() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["original"], throttleUnit: unit)
        try FileManager.default.copyItem(atPath: environment.path(of: "original"), toPath: environment.path(of: "copy"))
        chmod(environment.path(of: "copy"), 0o600)
        for name in ["original", "copy", "original"] {
            #expect(throws: KeychainError.self) {
                try store.locking.changePassword(name, old: secret("guess"), new: secret("mine"))
            }
        }
        let refused = try #require(throws: KeychainError.self) { try store.locking.unlock("copy", password: secret("pw")) }
        #expect(PasswordThrottle.isRefusal(refused))
        #expect(refused.detail?.contains("try again in") == true)
    }

    /// The two named ways around the throttle, for a password this daemon has just set or
    /// checked, neither wait out a delay nor count; the ordinary calls are still refused after.
    @Test func provenPasswordsGoAroundTheThrottle() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"], throttleUnit: unit)
        try store.lock("login")
        for _ in 0...PasswordThrottle.freeFailures {
            #expect(throws: KeychainError.self) { try store.locking.unlock("login", password: secret("guess")) }
        }
        let refused = try #require(throws: KeychainError.self) { try store.locking.unlock("login", password: secret("pw")) }
        #expect(PasswordThrottle.isRefusal(refused))
        try store.locking.unlockWithProvenPassword("login", password: secret("pw"))
        #expect(try !store.isLocked("login"))
        try store.locking.changePasswordWithProvenPassword("login", old: secret("pw"), new: secret("new"), byLogin: true)
        // Neither reset the count: the delay still holds for the ordinary calls.
        try store.lock("login")
        let still = try #require(throws: KeychainError.self) { try store.locking.unlock("login", password: secret("new")) }
        #expect(PasswordThrottle.isRefusal(still))
        #expect(try store.isLocked("login"))
    }

    /// Editing the identity in a copy does not buy a fresh count: the wrapped master key's
    /// associated data covers it, so that copy opens with no password, the right one included.
    @Test func aCopyWithAnEditedIdentityOpensWithNoPassword() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["original"])
        try FileManager.default.copyItem(atPath: environment.path(of: "original"), toPath: environment.path(of: "edited"))
        chmod(environment.path(of: "edited"), 0o600)
        _ = try sqlite(environment.path(of: "edited"), "UPDATE keychain SET uuid = randomblob(16)")
        #expect(try store.keychainIdentity("edited") != store.keychainIdentity("original"))
        let error = try #require(throws: KeychainError.self) { try store.unlock("edited", password: secret("pw")) }
        #expect(error.status == SecStatus.authFailed)
        try store.lock("original")
        try store.unlock("original", password: secret("pw"))
    }
}
