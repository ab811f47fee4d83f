import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

/// docs/login-unlock.md, "When the keychain's password is not the login password".
@Suite struct LoginPasswordLinkTests {
    @Test func aChangeOfLoginsPasswordIsMarkedAsChosenUnlessTheLoginMadeIt() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "work"])
        #expect(try store.loginPasswordLink("login") == .follows)

        try store.changePassword("login", old: secret("pw"), new: secret("mine"))
        #expect(try store.loginPasswordLink("login") == .changedOnPurpose)
        // Kept in the file, readable while locked, by a store that never saw the change.
        try store.lock("login")
        #expect(try environment.makeStore().loginPasswordLink("login") == .changedOnPurpose)
        #expect(try sqlite(environment.path(of: "login"), "SELECT value FROM keychain_metadata WHERE name = 'loginPassword'") == "changed")

        try store.changePassword("login", old: secret("mine"), new: secret("pw"), byLogin: true)
        #expect(try store.loginPasswordLink("login") == .follows)
        #expect(try store.isLocked("login"))

        // Other keychains get no mark; a wrong old password changes nothing.
        try store.changePassword("work", old: secret("pw"), new: secret("other"))
        #expect(try store.loginPasswordLink("work") == .follows)
        expectStatus(SecStatus.authFailed) { try store.changePassword("login", old: secret("wrong"), new: secret("x")) }
        #expect(try store.loginPasswordLink("login") == .follows)
    }

    @Test func theAnswerIsRecordedWhileLockedAndAnUnknownValueAsks() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        try store.lock("login")
        try store.setLoginPasswordLink("login", .separate)
        #expect(try store.loginPasswordLink("login") == .separate)
        try store.setLoginPasswordLink("login", .follows)
        try store.setLoginPasswordLink("login", .follows)
        #expect(try store.loginPasswordLink("login") == .follows)
        _ = try sqlite(environment.path(of: "login"), "INSERT INTO keychain_metadata VALUES ('loginPassword', 'later')")
        #expect(try environment.makeStore().loginPasswordLink("login") == .changedOnPurpose)
    }

    @Test func aFirstStoreKeychainIsMarkedAndOthersAreNot() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["Default keyring", "work"])
        try store.markFirstStoreKeychain("Default keyring")
        #expect(try store.isFirstStoreKeychain("Default keyring"))
        #expect(try store.isFirstStoreKeychain("work") == false)
        #expect(try store.keychainLabel("Default keyring") == nil, "the mark is not a label")
    }
}
