import Foundation
import KeywellProtocol
import KeywellTestSupport
import Testing

@testable import KeychainServices

/// What the Apple-shaped functions decide before, or without, reaching the daemon.
@Suite struct OfflineBehaviourTests {
    @Test func errorMessagesAreApples() {
        #expect(SecCopyErrorMessageString(errSecDuplicateItem, nil) as String? == "The specified item already exists in the keychain.")
        #expect(SecCopyErrorMessageString(errSecItemNotFound, nil) == "The specified item could not be found in the keychain.")
        #expect(SecCopyErrorMessageString(errSecSuccess, nil) == "No error.")
        #expect(SecCopyErrorMessageString(-1234, nil) == "The operation couldn\u{2019}t be completed. (OSStatus error -1234.)")
    }

    @Test func keychainReferences() {
        #expect(SecKeychain(nameOrPath: "login.keychain").nameOrPath == "login")
        #expect(SecKeychain(nameOrPath: "work.keychain-db").nameOrPath == "work")
        #expect(SecKeychain(nameOrPath: ".keychain").nameOrPath == ".keychain")
        #expect(SecKeychain(nameOrPath: "/abs/login.keychain").nameOrPath == "/abs/login.keychain")
        #expect(SecKeychain(nameOrPath: "a") == SecKeychain(nameOrPath: "a.keychain"))
        #expect(SecKeychain(nameOrPath: "a") != SecKeychain(nameOrPath: "b"))

        var opened: SecKeychain?
        #expect(SecKeychainOpen("never-created", &opened) == errSecSuccess)
        #expect(opened?.nameOrPath == "never-created")

        let array = [SecKeychain(nameOrPath: "a"), SecKeychain(nameOrPath: "b")] as CFArray
        #expect((array as? [SecKeychain])?.map(\.nameOrPath) == ["a", "b"])
    }

    @Test func getPathFollowsApplesBufferRules() {
        let keychain = SecKeychain(nameOrPath: "/tmp/somewhere/x.keychain-db")
        let path = "/tmp/somewhere/x.keychain-db"
        var buffer = [CChar](repeating: 0x7F, count: 64)
        var length = UInt32(buffer.count)
        #expect(SecKeychainGetPath(keychain, &length, &buffer) == errSecSuccess)
        #expect(length == UInt32(path.utf8.count))
        #expect(String(cString: buffer) == path)

        // Room for the path but not its NUL: too small, and the needed length is reported.
        var short = [CChar](repeating: 0, count: path.utf8.count)
        var shortLength = UInt32(short.count)
        #expect(SecKeychainGetPath(keychain, &shortLength, &short) == errSecBufferTooSmall)
        #expect(shortLength == UInt32(path.utf8.count))
    }

    @Test func expectedPathOfANameThatDoesNotExistYet() {
        #expect(KeychainArguments.expectedPath(ofName: "w", environment: ["XDG_DATA_HOME": "/d", "HOME": "/h"])
                == "/d/keywell/keychains/w.keychain-db")
        #expect(KeychainArguments.expectedPath(ofName: "w", environment: ["HOME": "/h"])
                == "/h/.local/share/keywell/keychains/w.keychain-db")
    }

    @Test func lockIntervals() {
        #expect(KeychainArguments.appleLockInterval(0) == UInt32(Int32.max))
        #expect(KeychainArguments.appleLockInterval(300) == 300)
        #expect(KeychainArguments.keywellLockAfterSeconds(UInt32(Int32.max)) == 0)
        #expect(KeychainArguments.keywellLockAfterSeconds(UInt32.max) == 0)
        #expect(KeychainArguments.keywellLockAfterSeconds(600) == 600)
    }

    @Test func settingsStructAsSwiftImportsIt() {
        var settings = SecKeychainSettings(version: UInt32(SEC_KEYCHAIN_SETTINGS_VERS1), lockOnSleep: true,
                                           useLockInterval: false, lockInterval: 300)
        #expect(settings.lockOnSleep.boolValue)
        settings.lockOnSleep = false
        #expect(settings.lockOnSleep == false)
        #expect(Bool(settings.useLockInterval) == false)
        #expect(SecKeychainSettings().version == 0)
    }

    @Test func argumentChecksBeforeTheDaemon() {
        #expect(SecKeychainDelete(nil) == errSecInvalidKeychain)
        #expect(SecKeychainDelete(NSString(string: "x")) == errSecInvalidKeychain)

        var settings = SecKeychainSettings()  // version 0
        #expect(SecKeychainCopySettings(SecKeychain(nameOrPath: "x"), &settings) == errSecParam)
        #expect(SecKeychainSetSettings(SecKeychain(nameOrPath: "x"), &settings) == errSecParam)

        var created: SecKeychain?
        #expect(SecKeychainCreate("x", 0, nil, true, nil, &created) == errSecInteractionNotAllowed)
        #expect(SecKeychainCreate("x", 4, nil, false, nil, &created) == errSecParam)
        #expect(created == nil)

        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecReturnData as String: true]
        #expect(SecItemCopyMatching(query as CFDictionary, nil) == errSecParam)
        #expect(SecItemAdd([kSecClass as String: kSecClassGenericPassword, kSecAttrSynchronizable as String: true] as CFDictionary, nil) == errSecParam)
    }

    @Test func noDaemonIsNotAvailable() throws {
        // A bus with no activatable keychain service: every call fails with errSecNotAvailable.
        let bus = try PrivateSessionBus()
        defer { bus.stop() }
        let client = KeywellClient(connection: try bus.connect(), timeout: .seconds(5))
        KeywellClient.withDefault(client) {
            let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "a"]
            #expect(SecItemAdd(query as CFDictionary, nil) == errSecNotAvailable)
            #expect(SecItemDelete(query as CFDictionary) == errSecNotAvailable)
            var keychain: SecKeychain?
            #expect(SecKeychainCopyDefault(&keychain) == errSecNotAvailable)
        }
        #expect(throws: KeychainError.self) { try client.listKeychains() }
    }

    @Test func closedConnectionIsNotAvailable() throws {
        let bus = try PrivateSessionBus()
        let connection = try bus.connect()
        connection.close()
        bus.stop()
        do {
            _ = try KeywellClient(connection: connection).searchList()
            Issue.record("a closed connection answered")
        } catch {
            #expect(error.status == errSecNotAvailable)
        }
    }
}
