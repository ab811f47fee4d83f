import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

@Suite struct KeychainLifecycleTests {
    @Test func aFreshUserHasLoginAsSearchListButNoDefaultUntilItExists() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        #expect(try store.searchList() == ["login"])
        #expect(try store.listKeychains() == [])
        expectStatus(SecStatus.noDefaultKeychain) { _ = try store.defaultKeychain() }
        expectStatus(SecStatus.noSuchKeychain) { _ = try store.loginKeychain() }
        expectStatus(SecStatus.noDefaultKeychain) { _ = try store.add(genp("a", "s")) }
    }

    @Test func creatingLoginMakesItTheDefaultWithLoginSettings() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        let events = EventRecorder(store)
        let path = try store.createKeychain("login", password: secret("pw"))
        #expect(path == environment.path(of: "login"))
        #expect(events.take() == [.defaultKeychainChanged("login")])
        #expect(try store.defaultKeychain() == "login")
        #expect(try store.loginKeychain() == "login")
        let info = try store.info("login")
        #expect(info == [
            KeychainInfoKey.name: .string("login"), KeychainInfoKey.path: .string(path),
            KeychainInfoKey.locked: .bool(false), KeychainInfoKey.itemCount: .integer(0),
            KeychainInfoKey.lockOnSleep: .bool(false), KeychainInfoKey.lockAfterSeconds: .integer(0),
            KeychainInfoKey.lockOnScreenLock: .bool(false),
            KeychainInfoKey.isDefault: .bool(true), KeychainInfoKey.isLogin: .bool(true),
            KeychainInfoKey.enforceAccess: .bool(true),
        ])
        // Without a settings file the fresh-user rules still hold.
        #expect(!FileManager.default.fileExists(atPath: environment.paths.configDirectory.path + "/settings.json"))
        _ = try store.add(genp("a", "s"))
        #expect(try store.copyMatching(genp("a", "s")).count == 1)
    }

    /// The default's location is kept with the name it was resolved from: every change of the
    /// name, back and forth, by name or by path, gives the location of the new name.
    @Test func theDefaultFollowsEveryChangeOfItsName() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        _ = try store.createKeychain("login", password: secret("pw"))
        _ = try store.createKeychain("work", password: secret("pw"))
        #expect(try store.defaultKeychain() == "login")
        try store.setDefaultKeychain("work")
        #expect(try store.defaultKeychain() == "work")
        _ = try store.add(genp("a", "s"))
        #expect(try store.info("work")[KeychainInfoKey.itemCount] == .integer(1))
        try store.setDefaultKeychain("login")
        #expect(try store.defaultKeychain() == "login")
        try store.setDefaultKeychain(environment.path(of: "work"))
        #expect(try store.defaultKeychain() == "work")
        try store.deleteKeychain("work")
        expectStatus(SecStatus.noDefaultKeychain) { _ = try store.defaultKeychain() }
    }

    @Test func otherKeychainsAreUnlockedWithMacOSDefaultsAndStayOutOfTheSearchList() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        let events = EventRecorder(store)
        _ = try store.createKeychain("work", password: secret("pw"))
        #expect(events.take() == [])
        let info = try store.info("work")
        #expect(info[KeychainInfoKey.locked] == .bool(false))
        #expect(info[KeychainInfoKey.lockOnSleep] == .bool(true))
        #expect(info[KeychainInfoKey.lockOnScreenLock] == .bool(true))
        #expect(info[KeychainInfoKey.lockAfterSeconds] == .integer(300))
        #expect(info[KeychainInfoKey.isDefault] == .bool(false))
        #expect(info[KeychainInfoKey.isLogin] == .bool(false))
        #expect(try store.searchList() == ["login"])
        #expect(try store.isLocked("work") == false)
        expectStatus(SecStatus.duplicateKeychain) { _ = try store.createKeychain("work", password: secret("other")) }
        // The refused duplicate did not touch the original.
        try store.lock("work")
        try store.unlock("work", password: secret("pw"))
    }

    @Test func emptyPasswordsAreAllowedAndStillEncrypt() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: [])
        _ = try store.createKeychain("empty", password: secret(""))
        try store.lock("empty")
        expectStatus(SecStatus.authFailed) { try store.unlock("empty", password: secret(" ")) }
        try store.unlock("empty", password: secret(""))
    }

    @Test func aMissingKeychainIsNoSuchKeychainEverywhere() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let missing = "ghost"
        expectStatus(SecStatus.noSuchKeychain) { try store.unlock(missing, password: secret("pw")) }
        expectStatus(SecStatus.noSuchKeychain) { try store.lock(missing) }
        expectStatus(SecStatus.noSuchKeychain) { _ = try store.isLocked(missing) }
        expectStatus(SecStatus.noSuchKeychain) { _ = try store.info(missing) }
        expectStatus(SecStatus.noSuchKeychain) { try store.setSettings(missing, [KeychainInfoKey.lockOnSleep: .bool(true)]) }
        expectStatus(SecStatus.noSuchKeychain) { try store.changePassword(missing, old: secret("a"), new: secret("b")) }
        expectStatus(SecStatus.noSuchKeychain) { try store.deleteKeychain(missing) }
        expectStatus(SecStatus.noSuchKeychain) { try store.setDefaultKeychain(missing) }
        expectStatus(SecStatus.noSuchKeychain) { try store.setDefaultKeychain("/nowhere/x.keychain-db") }
        let use: WireDictionary = [WireKey.useKeychain: .string(missing)]
        expectStatus(SecStatus.noSuchKeychain) { _ = try store.add(genp("a", "s") + use) }
        expectStatus(SecStatus.noSuchKeychain) { _ = try store.copyMatching(genp("a", "s") + use) }
        expectStatus(SecStatus.noSuchKeychain) { try store.update(genp("a", "s") + use, ["labl": .string("x")]) }
        expectStatus(SecStatus.noSuchKeychain) { try store.delete(genp("a", "s") + use) }
    }

    @Test func deletingTheDefaultLeavesNoDefaultAndDropsItFromTheSearchList() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "work"])
        try store.setSearchList(["login", "work"])
        let events = EventRecorder(store)
        try store.deleteKeychain("login")
        #expect(events.take() == [.defaultKeychainChanged(""), .searchListChanged(["work"])])
        #expect(!FileManager.default.fileExists(atPath: environment.path(of: "login")))
        expectStatus(SecStatus.noDefaultKeychain) { _ = try store.defaultKeychain() }
        expectStatus(SecStatus.noDefaultKeychain) { _ = try store.add(genp("a", "s")) }
        #expect(try store.searchList() == ["work"])

        // Recreating login does not bring the default back: the settings keep what was set.
        _ = try store.createKeychain("login", password: secret("pw"))
        expectStatus(SecStatus.noDefaultKeychain) { _ = try store.defaultKeychain() }
        #expect(events.take() == [])
        try store.setDefaultKeychain("work")
        #expect(events.take() == [.defaultKeychainChanged("work")])
        try store.setDefaultKeychain("work")
        #expect(events.take() == [])
        #expect(try store.defaultKeychain() == "work")
    }

    @Test func aFreshUserDeletingLoginWritesTheSettingsItImplied() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let events = EventRecorder(store)
        try store.deleteKeychain("login")
        #expect(events.take() == [.defaultKeychainChanged(""), .searchListChanged([])])
        #expect(try store.searchList() == [])
        // A new store reads the same from the file.
        let reopened = try environment.makeStore()
        #expect(try reopened.searchList() == [])
        _ = try reopened.createKeychain("login", password: secret("pw"))
        expectStatus(SecStatus.noDefaultKeychain) { _ = try reopened.defaultKeychain() }
    }

    @Test func deletingAnUnlistedKeychainChangesNoSettings() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "work"])
        let events = EventRecorder(store)
        try store.deleteKeychain("work")
        #expect(events.take() == [])
        #expect(try store.searchList() == ["login"])
        #expect(try store.defaultKeychain() == "login")
        #expect(try store.listKeychains() == ["login"])
        expectStatus(SecStatus.noSuchKeychain) { _ = try store.info("work") }
    }

    @Test func searchListsKeepOrderAcceptMissingKeychainsAndDropRepeats() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["a", "b"])
        let events = EventRecorder(store)
        try store.setSearchList(["b", "missing", "a", "b", "a.keychain-db"])
        #expect(try store.searchList() == ["b", "missing", "a"])
        #expect(events.take() == [.searchListChanged(["b", "missing", "a"])])
        try store.setSearchList(["b", "missing", "a"])
        #expect(events.take() == [])
        // Setting the list fixes the default too, so it no longer follows the fresh-user rule.
        #expect(try environment.makeStore().searchList() == ["b", "missing", "a"])
        try store.setSearchList([])
        #expect(try store.searchList() == [])
        #expect(events.take() == [.searchListChanged([])])
    }

    /// Issue 21: create a keychain, make it the default, store, read back without naming it.
    @Test func aSearchListNeverSetFollowsTheDefaultKeychain() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        _ = try store.createKeychain("A", password: secret("pw"))
        #expect(try store.searchList() == ["login"])
        let events = EventRecorder(store)
        try store.setDefaultKeychain("A")
        #expect(events.take() == [.defaultKeychainChanged("A"), .searchListChanged(["A"])])
        #expect(try store.searchList() == ["A"])
        _ = try store.add(genp("u", "svc"))
        #expect(try store.copyMatching(genp("u", "svc")).count == 1)
        #expect(try environment.makeStore().searchList() == ["A"])

        // A list the user set stays as set when the default moves.
        _ = try store.createKeychain("B", password: secret("pw"))
        try store.setSearchList(["A"])
        try store.setDefaultKeychain("B")
        #expect(try store.searchList() == ["A"])
        // As on macOS, a list of just login while login is the default is stored as no list.
        _ = try store.createKeychain("login", password: secret("pw"))
        try store.setDefaultKeychain("login")
        try store.setSearchList(["login"])
        try store.setDefaultKeychain("B")
        #expect(try store.searchList() == ["B"])
    }

    /// Older settings files stored `[login]` for every user who never set a list.
    @Test func anOldSettingsFileWithTheFreshListFollowsTheDefault() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["A", "B"])
        let folder = environment.paths.configDirectory.path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let path = folder + "/settings.json"
        func writeOld(_ json: String) throws {
            try? FileManager.default.removeItem(atPath: path)
            #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8), attributes: [.posixPermissions: 0o600]))
        }
        try writeOld(#"{"defaultKeychain": "A", "searchList": ["login"]}"#)
        #expect(try environment.makeStore().searchList() == ["A"])
        try writeOld(#"{"defaultKeychain": "A", "searchList": ["B", "login"]}"#)
        #expect(try environment.makeStore().searchList() == ["B", "login"])
        _ = store
    }

    @Test func listKeychainsShowsTheFolderSortedThenPathKeychainsInTheSettings() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["zeta", "alpha", "login"])
        let outside = environment.root.path + "/outside.keychain-db"
        _ = try store.createKeychain(outside, password: secret("pw"))
        #expect(try store.listKeychains() == ["alpha", "login", "zeta"])
        try store.setSearchList(["zeta", outside, environment.root.path + "/gone.keychain-db"])
        #expect(try store.listKeychains() == ["alpha", "login", "zeta", outside])
        // Stray files in the folder are not keychains.
        _ = FileManager.default.createFile(atPath: environment.keychainsDirectory + "/notes.txt", contents: Data())
        _ = FileManager.default.createFile(atPath: environment.keychainsDirectory + "/.hidden.keychain-db", contents: Data())
        #expect(try store.listKeychains() == ["alpha", "login", "zeta", outside])
    }

    @Test func settingsSurviveANewStoreAndAreWrittenPrivately() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "work"])
        try store.setDefaultKeychain("work")
        try store.setSearchList(["work", "login"])
        let reopened = try environment.makeStore()
        #expect(try reopened.defaultKeychain() == "work")
        #expect(try reopened.searchList() == ["work", "login"])
        let settingsPath = environment.paths.configDirectory.path + "/settings.json"
        #expect(try fileMode(settingsPath) == 0o600)
        #expect(try fileMode(environment.paths.configDirectory.path) == 0o700)
    }

    @Test func aSettingsFileChangedOnDiskIsReadAgain() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "work"])
        try store.setSearchList(["login"])
        let other = try environment.makeStore()
        try other.setSearchList(["work"])
        #expect(try store.searchList() == ["work"])
    }
}

func fileMode(_ path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as! NSNumber).intValue & 0o7777
}
