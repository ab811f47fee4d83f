import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

/// The master key wrapped a second time (docs/login-unlock.md): it opens its own keychain with
/// its own key, and nothing else.
@Suite struct SecondWrappingTests {
    @Test func theWrappingUnlocksItsKeychainWithItsKey() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        let key = SecondWrapping.randomKey()
        let wrapping = try store.secondWrapping("work", under: key)
        try store.lock("work")
        expectStatus(SecStatus.authFailed) { try store.unlock("work", wrapping: wrapping, key: SecondWrapping.randomKey()) }
        #expect(try store.isLocked("work"))
        try store.unlock("work", wrapping: wrapping, key: key)
        #expect(try store.isLocked("work") == false)
        // The password still opens it: the second wrapping changes nothing in the file.
        try store.lock("work")
        try store.unlock("work", password: secret("pw"))
    }

    @Test func itNeedsTheKeychainUnlockedAndOpensNoOtherKeychain() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work", "home"])
        let key = SecondWrapping.randomKey()
        let wrapping = try store.secondWrapping("work", under: key)
        try store.lock("home")
        expectStatus(SecStatus.interactionNotAllowed) { _ = try store.secondWrapping("home", under: key) }
        expectStatus(SecStatus.authFailed) { try store.unlock("home", wrapping: wrapping, key: key) }
        // Moved to another keychain's identity, it fails to authenticate.
        let moved = SecondWrapping(keychain: try store.keychainIdentity("home"), sealed: wrapping.sealed)
        expectStatus(SecStatus.authFailed) { try store.unlock("home", wrapping: moved, key: key) }
        #expect(try store.isLocked("home"))
    }

    @Test func aPasswordChangeKeepsTheWrappingValid() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        let key = SecondWrapping.randomKey()
        let wrapping = try store.secondWrapping("work", under: key)
        try store.changePassword("work", old: secret("pw"), new: secret("new"))
        try store.lock("work")
        try store.unlock("work", wrapping: wrapping, key: key)
        #expect(try store.isLocked("work") == false)
    }
}
