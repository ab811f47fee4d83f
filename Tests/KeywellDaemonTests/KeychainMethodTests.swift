import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// The keychain-level methods through the real daemon.
@Suite struct KeychainMethodTests {
    @Test func createListDeleteAndDefaults() throws {
        let fixture = try DaemonFixture()
        expectKeychainError("NoSuchKeychain", SecStatus.noSuchKeychain) { _ = try fixture.call("GetLoginKeychain") }
        expectKeychainError("NoDefaultKeychain", SecStatus.noDefaultKeychain) { _ = try fixture.call("GetDefaultKeychain") }
        #expect(try fixture.call("GetSearchList") == [.stringArray(["login"])], "a fresh user's search list")

        let path = try fixture.createKeychain("login")
        #expect(path == fixture.bus.dataHome + "/keywell/keychains/login.keychain-db")
        try fixture.createKeychain("work", password: "")
        expectKeychainError("DuplicateKeychain", SecStatus.duplicateKeychain) { try fixture.createKeychain("work") }
        expectKeychainError("Param", SecStatus.param) { try fixture.createKeychain(".hidden") }

        #expect(try fixture.call("ListKeychains") == [.stringArray(["login", "work"])])
        #expect(try fixture.call("GetLoginKeychain") == ["login"])
        #expect(try fixture.call("GetDefaultKeychain") == ["login"])
        try fixture.call("SetDefaultKeychain", ["work"])
        #expect(try fixture.call("GetDefaultKeychain") == ["work"])
        expectKeychainError("NoSuchKeychain", SecStatus.noSuchKeychain) { try fixture.call("SetDefaultKeychain", ["nope"]) }

        try fixture.call("SetSearchList", [.stringArray(["work", "login", "later"])])
        #expect(try fixture.call("GetSearchList") == [.stringArray(["work", "login", "later"])])

        try fixture.call("DeleteKeychain", ["work"])
        expectKeychainError("NoSuchKeychain", SecStatus.noSuchKeychain) { try fixture.call("DeleteKeychain", ["work"]) }
        expectKeychainError("NoDefaultKeychain", SecStatus.noDefaultKeychain) { _ = try fixture.call("GetDefaultKeychain") }
        #expect(try fixture.call("GetSearchList") == [.stringArray(["login", "later"])])
    }

    @Test func lockUnlockAndPasswords() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("k1", password: "one")
        try fixture.createKeychain("k2", password: "two")
        #expect(try fixture.info("k1")["locked"] == false, "a new keychain is unlocked")
        try fixture.call("Lock", ["k1"])
        #expect(try fixture.info("k1")["locked"] == true)
        expectKeychainError("AuthFailed", SecStatus.authFailed) { try fixture.call("Unlock", ["k1", secret("wrong")]) }
        try fixture.call("Unlock", ["k1", secret("one")])
        #expect(try fixture.info("k1")["locked"] == false)
        try fixture.call("LockAll")
        #expect(try fixture.info("k1")["locked"] == true)
        #expect(try fixture.info("k2")["locked"] == true)
        expectKeychainError("NoSuchKeychain", SecStatus.noSuchKeychain) { try fixture.call("Lock", ["none"]) }
        expectKeychainError("NoSuchKeychain", SecStatus.noSuchKeychain) { try fixture.call("Unlock", ["none", secret("x")]) }

        expectKeychainError("AuthFailed", SecStatus.authFailed) {
            try fixture.call("ChangePassword", ["k2", secret("bad"), secret("new")])
        }
        try fixture.call("ChangePassword", ["k2", secret("two"), secret("new")])
        #expect(try fixture.info("k2")["locked"] == true, "ChangePassword keeps the lock state")
        expectKeychainError("AuthFailed", SecStatus.authFailed) { try fixture.call("Unlock", ["k2", secret("two")]) }
        try fixture.call("Unlock", ["k2", secret("new")])
    }

    @Test func infoAndSettings() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        let path = try fixture.createKeychain("other")
        try fixture.add(genp("a", ["u_Keychain": "other"]))
        let info = try fixture.info("other")
        #expect(info == [
            "name": "other", "path": .string(path), "locked": false, "itemCount": .uint32(1), "lockOnSleep": true,
            "lockAfterSeconds": .uint32(300), "isDefault": false, "isLogin": false, "enforceAccess": true,
            "lockOnScreenLock": true,
        ])
        let login = try fixture.info("login")
        #expect(login["lockAfterSeconds"] == .uint32(0))
        #expect(login["lockOnSleep"] == false)
        #expect(login["isLogin"] == true && login["isDefault"] == true)
        #expect(try fixture.info(path)["name"] == "other", "a path addresses a keychain too")

        try fixture.call("SetSettings", ["other", .stringVariantDict(["lockAfterSeconds": .int32(60)])])
        #expect(try fixture.info("other")["lockAfterSeconds"] == .uint32(60))
        #expect(try fixture.info("other")["lockOnSleep"] == true, "only the keys given change")
        try fixture.call("SetSettings", ["other", .stringVariantDict(["enforceAccess": .bool(false)])])
        #expect(try fixture.info("other")["enforceAccess"] == false)
        #expect(try fixture.info("other")["lockAfterSeconds"] == .uint32(60), "only the keys given change")
        try fixture.call("SetSettings", ["other", .stringVariantDict(["lockOnSleep": false])])
        #expect(try fixture.info("other")["lockOnSleep"] == false)
        expectKeychainError("Param", SecStatus.param) {
            try fixture.call("SetSettings", ["other", .stringVariantDict(["color": "blue"])])
        }
        expectKeychainError("Param", SecStatus.param) {
            try fixture.call("SetSettings", ["other", .stringVariantDict(["lockOnSleep": .uint32(1)])])
        }
        expectKeychainError("NoSuchKeychain", SecStatus.noSuchKeychain) { _ = try fixture.info("absent") }
        try fixture.call("Lock", ["other"])
        #expect(try fixture.info("other")["locked"] == true, "GetInfo works while locked")
    }
}
