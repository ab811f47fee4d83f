import Foundation
import KeychainServices
import KeywellProtocol
import KeywellTestSupport
import Testing

/// AppleStyleProgram.swift run against the real keywelld, started by D-Bus activation on a
/// private bus (each test its own bus, home and daemon).
@Suite(.enabled(if: ContinuousIntegration.runs(if: KeychainDaemonBus.daemonIsBuilt), "keywelld is not built next to the tests"))
struct AppleStyleTests {
    @Test func genericPasswordLifecycle() throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        session.run {
            #expect(PasswordStore.save(service: "mail", account: "alice", password: "s3cret") == errSecSuccess)
            #expect(PasswordStore.save(service: "mail", account: "alice", password: "other") == errSecDuplicateItem)
            #expect(PasswordStore.message(errSecDuplicateItem) == "The specified item already exists in the keychain.")

            let (readStatus, password) = PasswordStore.read(service: "mail", account: "alice")
            #expect(readStatus == errSecSuccess)
            #expect(password == "s3cret")

            let (attributesStatus, attributes) = PasswordStore.attributes(service: "mail", account: "alice")
            #expect(attributesStatus == errSecSuccess)
            #expect(attributes?[kSecAttrAccount as String] as? String == "alice")
            #expect(attributes?[kSecAttrService as String] as? String == "mail")
            #expect(attributes?[kSecClass as String] as? String == kSecClassGenericPassword as String)
            #expect(attributes?[kSecValueData as String] == nil)
            let created = attributes?[kSecAttrCreationDate as String] as? Date
            #expect(created.map { abs($0.timeIntervalSinceNow) < 120 } == true)
            #expect(attributes?[kSecAttrModificationDate as String] is Date)

            let (bothStatus, both) = PasswordStore.attributesAndPassword(service: "mail", account: "alice")
            #expect(bothStatus == errSecSuccess)
            #expect(both?[kSecAttrAccount as String] as? String == "alice")
            #expect((both?[kSecValueData as String] as? Data).flatMap { String(data: $0, encoding: .utf8) } == "s3cret")

            #expect(PasswordStore.update(service: "mail", account: "alice", password: "n3w") == errSecSuccess)
            #expect(PasswordStore.read(service: "mail", account: "alice").1 == "n3w")
            #expect(PasswordStore.upsert(service: "mail", account: "alice", password: "n3wer") == errSecSuccess)
            #expect(PasswordStore.read(service: "mail", account: "alice").1 == "n3wer")

            let (existsStatus, hasResult) = PasswordStore.exists(service: "mail", account: "alice")
            #expect(existsStatus == errSecSuccess)
            #expect(hasResult == false)  // no return type: no result

            #expect(PasswordStore.delete(service: "mail", account: "alice") == errSecSuccess)
            #expect(PasswordStore.read(service: "mail", account: "alice").0 == errSecItemNotFound)
            #expect(PasswordStore.delete(service: "mail", account: "alice") == errSecItemNotFound)
            #expect(PasswordStore.update(service: "mail", account: "alice", password: "x") == errSecItemNotFound)
            #expect(PasswordStore.exists(service: "mail", account: "alice").0 == errSecItemNotFound)
        }
    }

    @Test func arraysForLimitsOtherThanOne() throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        session.run {
            for account in ["a", "b", "c"] {
                #expect(PasswordStore.save(service: "svc", account: account, password: "pw-\(account)") == errSecSuccess)
            }
            #expect(PasswordStore.save(service: "elsewhere", account: "a", password: "x") == errSecSuccess)
            #expect(PasswordStore.accounts(service: "svc") == (errSecSuccess, ["a", "b", "c"]))
            #expect(PasswordStore.passwords(service: "svc") == (errSecSuccess, ["pw-a", "pw-b", "pw-c"]))
            let (limitedStatus, limited) = PasswordStore.passwords(service: "svc", limit: 2)
            #expect(limitedStatus == errSecSuccess)
            #expect(limited.count == 2)
            #expect(PasswordStore.accounts(service: "nothing-here").0 == errSecItemNotFound)
        }
    }

    @Test func internetPasswordsWithAppleConstants() throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        try session.run {
            #expect(WebCredentials.save(server: "example.com", account: "bob", password: "web-pw") == errSecSuccess)
            #expect(WebCredentials.save(server: "example.com", account: "bob", password: "again") == errSecDuplicateItem)
            let (status, item) = WebCredentials.find(server: "example.com")
            #expect(status == errSecSuccess)
            let attributes = try #require(item)
            #expect(attributes[kSecAttrServer as String] as? String == "example.com")
            #expect(attributes[kSecAttrProtocol as String] as? String == kSecAttrProtocolHTTPS as String)
            #expect(attributes[kSecAttrAuthenticationType as String] as? String == kSecAttrAuthenticationTypeHTMLForm as String)
            #expect(attributes[kSecAttrPort as String] as? Int == 443)
            #expect(attributes[kSecAttrPath as String] as? String == "/login")
            #expect(attributes[kSecAttrCreator as String] as? UInt32 == 0x6B_77_6C_6C)
            #expect(attributes[kSecAttrIsInvisible as String] as? Bool == true)
            #expect(attributes[kSecAttrLabel as String] as? String == "example.com (bob)")
            #expect((attributes[kSecValueData as String] as? Data) == Data("web-pw".utf8))
            #expect(WebCredentials.find(server: "example.org").0 == errSecItemNotFound)
        }
    }

    @Test func persistentReferences() throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        session.run {
            let (status, reference) = PersistentReferences.addReturningReference(service: "ref", account: "r")
            #expect(status == errSecSuccess)
            guard let reference else { Issue.record("no persistent ref"); return }
            #expect(PersistentReferences.password(for: reference) == (errSecSuccess, "by-ref"))
            #expect(PersistentReferences.delete(reference) == errSecSuccess)
            #expect(PersistentReferences.password(for: reference).0 == errSecItemNotFound)
            #expect(PersistentReferences.password(for: Data("not a reference".utf8)).0 == errSecParam)
        }
    }

    @Test func keychainLifecycleAndLocking() throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        try session.run {
            let (createStatus, created) = Keychains.create("work.keychain", password: "work-pw")
            #expect(createStatus == errSecSuccess)
            let work = try #require(created)
            #expect(Keychains.create("work.keychain", password: "again").0 == errSecDuplicateKeychain)

            // New keychains are unlocked and have macOS's settings.
            let (statusResult, unlocked, flags) = Keychains.isUnlocked(work)
            #expect(statusResult == errSecSuccess)
            #expect(unlocked)
            #expect(flags == SecKeychainStatus(kSecUnlockStateStatus | kSecReadPermStatus | kSecWritePermStatus))
            let (settingsStatus, settings) = Keychains.settings(work)
            #expect(settingsStatus == errSecSuccess)
            #expect(settings.lockOnSleep.boolValue)
            #expect(settings.lockInterval == 300)

            #expect(Keychains.savePassword(in: work, service: "vpn", account: "me", password: "tunnel") == errSecSuccess)
            #expect(Keychains.readPassword(from: [work], service: "vpn", account: "me") == (errSecSuccess, "tunnel"))
            // Not in the search list (macOS does not add private keychains to it).
            #expect(PasswordStore.read(service: "vpn", account: "me").0 == errSecItemNotFound)

            // Locked: attributes yes, secrets and changes no.
            #expect(SecKeychainLock(work) == errSecSuccess)
            #expect(Keychains.isUnlocked(work).1 == false)
            #expect(Keychains.isUnlocked(work).2 == SecKeychainStatus(kSecReadPermStatus))
            #expect(Keychains.readPassword(from: [work], service: "vpn", account: "me").0 == errSecInteractionNotAllowed)
            #expect(Keychains.readAttributes(from: [work], service: "vpn").1?[kSecAttrAccount as String] as? String == "me")
            #expect(Keychains.savePassword(in: work, service: "vpn", account: "two", password: "x") == errSecInteractionNotAllowed)
            #expect(Keychains.unlockWithPrompt(work) == errSecInteractionNotAllowed)

            #expect(Keychains.unlock(work, password: "wrong") == errSecAuthFailed)
            #expect(PasswordStore.message(errSecAuthFailed) == "The user name or passphrase you entered is not correct.")
            #expect(Keychains.unlock(work, password: "work-pw") == errSecSuccess)
            #expect(Keychains.unlockWithPrompt(work) == errSecSuccess)  // unlocked: nothing to prompt for
            #expect(Keychains.readPassword(from: [work], service: "vpn", account: "me") == (errSecSuccess, "tunnel"))

            // Password change keeps the lock state and needs the old password.
            #expect(Keychains.changePassword(work, from: "wrong", to: "x") == errSecAuthFailed)
            #expect(Keychains.changePassword(work, from: "work-pw", to: "new-pw") == errSecSuccess)
            #expect(Keychains.isUnlocked(work).1)
            #expect(SecKeychainLock(work) == errSecSuccess)
            #expect(Keychains.unlock(work, password: "work-pw") == errSecAuthFailed)
            #expect(Keychains.unlock(work, password: "new-pw") == errSecSuccess)

            // Settings.
            #expect(Keychains.setSettings(work, lockOnSleep: false, lockInterval: UInt32(Int32.max)) == errSecSuccess)
            #expect(Keychains.settings(work).1 == SecKeychainSettings(version: 1, lockOnSleep: false, useLockInterval: false,
                                                                      lockInterval: UInt32(Int32.max)))
            #expect(Keychains.setSettings(work, lockOnSleep: true, lockInterval: 600) == errSecSuccess)
            #expect(Keychains.settings(work).1.lockInterval == 600)

            // Path.
            let (pathStatus, path) = Keychains.path(work)
            #expect(pathStatus == errSecSuccess)
            #expect(path?.hasSuffix("/keywell/keychains/work.keychain-db") == true)
            #expect(path.map { FileManager.default.fileExists(atPath: $0) } == true)

            // LockAll.
            #expect(SecKeychainLockAll() == errSecSuccess)
            #expect(Keychains.isUnlocked(work).1 == false)
            #expect(Keychains.isUnlocked(nil).1 == false)  // nil: the default keychain (login)

            // Delete; afterwards the reference names nothing.
            #expect(SecKeychainDelete(work) == errSecSuccess)
            #expect(Keychains.isUnlocked(work).0 == errSecNoSuchKeychain)
            #expect(Keychains.unlock(work, password: "new-pw") == errSecNoSuchKeychain)
            #expect(SecKeychainDelete(work) == errSecNoSuchKeychain)
            #expect(SecKeychainDelete(nil) == errSecInvalidKeychain)
        }
    }

    @Test func defaultLoginAndSearchList() throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        try session.run {
            let (loginStatus, login) = Keychains.loginKeychain()
            #expect(loginStatus == errSecSuccess)
            let (defaultStatus, defaultKeychain) = Keychains.defaultKeychain()
            #expect(defaultStatus == errSecSuccess)
            #expect(defaultKeychain == login)
            #expect(Keychains.path(nil).1?.hasSuffix("/login.keychain-db") == true)

            let (_, created) = Keychains.create("second", password: "pw")
            let second = try #require(created)
            #expect(Keychains.setSearchList([try #require(login), second]) == errSecSuccess)
            let (listStatus, paths) = Keychains.searchListPaths()
            #expect(listStatus == errSecSuccess)
            #expect(paths.count == 2)
            #expect(paths.last?.hasSuffix("/second.keychain-db") == true)

            // Items in the search list are found without naming the keychain.
            #expect(Keychains.savePassword(in: second, service: "s", account: "a", password: "in-second") == errSecSuccess)
            #expect(PasswordStore.read(service: "s", account: "a") == (errSecSuccess, "in-second"))

            #expect(SecKeychainSetDefault(second) == errSecSuccess)
            #expect(Keychains.defaultKeychain().1 == second)
            #expect(PasswordStore.save(service: "d", account: "a", password: "to-default") == errSecSuccess)
            #expect(Keychains.readPassword(from: [second], service: "d", account: "a") == (errSecSuccess, "to-default"))
            #expect(SecKeychainSetDefault(nil) == errSecSuccess)  // NULL keeps the default
            #expect(Keychains.defaultKeychain().1 == second)

            // Deleting the default leaves none (macOS).
            #expect(SecKeychainDelete(second) == errSecSuccess)
            #expect(Keychains.defaultKeychain().0 == errSecNoDefaultKeychain)
            #expect(PasswordStore.save(service: "x", account: "y", password: "z") == errSecNoDefaultKeychain)
        }
    }

    @Test func errorStatusesOfBadInput() throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        session.run {
            // No class.
            let noClass: [String: Any] = [kSecAttrAccount as String: "a", kSecValueData as String: Data()]
            #expect(SecItemAdd(noClass as CFDictionary, nil) == errSecParam)
            // A value of the wrong type.
            let wrongPort: [String: Any] = [kSecClass as String: kSecClassInternetPassword, kSecAttrPort as String: "eighty"]
            #expect(SecItemAdd(wrongPort as CFDictionary, nil) == errSecParam)
            // Return keys in an update query.
            let updateQuery: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecReturnData as String: true]
            #expect(SecItemUpdate(updateQuery as CFDictionary, [kSecAttrLabel as String: "l"] as CFDictionary) == errSecParam)
            // Read-only attributes.
            let readOnly: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrCreationDate as String: Date()]
            #expect(SecItemAdd(readOnly as CFDictionary, nil) == errSecReadOnlyAttr)
            // An attribute of the other class, and an unknown class.
            let otherClass: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrServer as String: "s"]
            #expect(SecItemAdd(otherClass as CFDictionary, nil) == errSecNoSuchAttr)
            let certificate: [String: Any] = [kSecClass as String: kSecClassCertificate]
            #expect(SecItemCopyMatching(certificate as CFDictionary, nil) == errSecNoSuchClass)
            #expect(PasswordStore.message(errSecParam) == "One or more parameters passed to a function were not valid.")
        }
    }

    @Test func missingKeychains() throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        session.run {
            let missing = Keychains.open("does-not-exist")!
            #expect(Keychains.savePassword(in: missing, service: "s", account: "a", password: "p") == errSecNoSuchKeychain)
            #expect(Keychains.unlock(missing, password: "p") == errSecNoSuchKeychain)
            #expect(SecKeychainLock(missing) == errSecNoSuchKeychain)
            #expect(Keychains.isUnlocked(missing).0 == errSecNoSuchKeychain)
            #expect(Keychains.settings(missing).0 == errSecNoSuchKeychain)
            #expect(SecKeychainDelete(missing) == errSecNoSuchKeychain)
            // Apple's GetPath needs no file: the path it would have.
            #expect(Keychains.path(missing).1?.hasSuffix("/keywell/keychains/does-not-exist.keychain-db") == true)
            #expect(PasswordStore.message(errSecNoSuchKeychain) == "The specified keychain could not be found.")
        }
    }

    @Test func lockedDefaultKeychain() throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        session.run {
            #expect(PasswordStore.save(service: "s", account: "a", password: "p") == errSecSuccess)
            #expect(SecKeychainLock(nil) == errSecSuccess)
            #expect(PasswordStore.read(service: "s", account: "a").0 == errSecInteractionNotAllowed)
            #expect(PasswordStore.attributes(service: "s", account: "a").0 == errSecSuccess)
            #expect(PasswordStore.save(service: "s", account: "b", password: "p") == errSecInteractionNotAllowed)
            #expect(PasswordStore.update(service: "s", account: "a", password: "q") == errSecInteractionNotAllowed)
            #expect(PasswordStore.delete(service: "s", account: "a") == errSecInteractionNotAllowed)
            #expect(PasswordStore.message(errSecInteractionNotAllowed) == "User interaction is not allowed.")
            #expect(SecKeychainUnlock(nil, 8, "login-pw", true) == errSecSuccess)
            #expect(PasswordStore.read(service: "s", account: "a") == (errSecSuccess, "p"))
        }
    }

    @Test func freshUserHasNoLoginKeychain() throws {
        let session = try KeychainDaemonBus()
        session.run {
            #expect(Keychains.loginKeychain().0 == errSecNoSuchKeychain)
            #expect(Keychains.defaultKeychain().0 == errSecNoDefaultKeychain)
            #expect(PasswordStore.save(service: "s", account: "a", password: "p") == errSecNoDefaultKeychain)
            // SecKeychainCreate("login") is how a login keychain is made without PAM.
            let (status, login) = Keychains.create("login.keychain", password: "pw")
            #expect(status == errSecSuccess)
            #expect(Keychains.loginKeychain().1 == login)
            #expect(Keychains.settings(login).1.lockInterval == UInt32(Int32.max))  // the login keychain never times out
        }
    }
}
