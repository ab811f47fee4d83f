import Foundation
import KeychainServices
import KeywellProtocol
import KeywellSystem
import KeywellTestSupport
import Testing

/// The Swift layer (what the `keywell` CLI uses) against the real daemon.
@Suite(.enabled(if: ContinuousIntegration.runs(if: KeychainDaemonBus.daemonIsBuilt), "keywelld is not built next to the tests"))
struct KeywellClientTests {
    /// The OSStatus a call fails with (every failure is a KeychainError), or errSecSuccess.
    private func status(_ body: () throws -> Void) -> OSStatus {
        do {
            try body()
            return errSecSuccess
        } catch let error as KeychainError {
            return error.status
        } catch {
            Issue.record("not a KeychainError: \(error)")
            return errSecIO
        }
    }

    @Test func keychainMethods() throws {
        let session = try KeychainDaemonBus()
        let client = session.client
        #expect(status { _ = try client.loginKeychain() } == errSecNoSuchKeychain)
        #expect(status { _ = try client.defaultKeychain() } == errSecNoDefaultKeychain)

        let path = try client.createKeychain("login", password: SecretBytes(copying: "pw".utf8))
        #expect(path.hasPrefix(session.bus.dataHome))
        #expect(path.hasSuffix("/keywell/keychains/login.keychain-db"))
        #expect(try client.loginKeychain() == "login")
        #expect(try client.defaultKeychain() == "login")
        #expect(status { try client.createKeychain("login", password: SecretBytes(count: 0)) } == errSecDuplicateKeychain)

        try client.createKeychain("work", password: SecretBytes(count: 0))  // an empty password is allowed
        #expect(try client.listKeychains().sorted() == ["login", "work"])
        #expect(try client.searchList() == ["login"])
        try client.setSearchList(["work", "login", "not-yet"])
        #expect(try client.searchList() == ["work", "login", "not-yet"])

        let info = try client.info("work")
        #expect(info == KeychainInfo(name: "work", path: info.path, locked: false, itemCount: 0, lockOnSleep: true,
                                     lockAfterSeconds: 300, isDefault: false, isLogin: false, enforceAccess: true,
                                     lockOnScreenLock: true))
        let login = try client.info("login")
        #expect(login.isLogin && login.isDefault && login.lockAfterSeconds == 0 && !login.lockOnSleep && !login.lockOnScreenLock)

        try client.setSettings("work", lockAfterSeconds: 0)
        #expect(try client.info("work").lockAfterSeconds == 0)
        #expect(try client.info("work").lockOnSleep)  // untouched
        try client.setSettings("work", lockOnSleep: false)
        #expect(try client.info("work").lockOnSleep == false)
        #expect(try client.info("work").lockOnScreenLock)  // untouched
        try client.setSettings("work", lockOnScreenLock: false)
        #expect(try client.info("work").lockOnScreenLock == false)

        try client.lock("work")
        #expect(try client.info("work").locked)
        #expect(status { try client.unlock("work", password: SecretBytes(copying: "x".utf8)) } == errSecAuthFailed)
        try client.unlock("work", password: SecretBytes(count: 0))
        try client.changePassword("work", oldPassword: SecretBytes(count: 0), newPassword: SecretBytes(copying: "new".utf8))
        try client.lockAll()
        #expect(try client.info("work").locked && client.info("login").locked)
        try client.unlock("work", password: SecretBytes(copying: "new".utf8))

        try client.setDefaultKeychain("work")
        #expect(try client.info("work").isDefault)
        try client.deleteKeychain("work")
        #expect(status { _ = try client.defaultKeychain() } == errSecNoDefaultKeychain)
        #expect(status { _ = try client.info("work") } == errSecNoSuchKeychain)
        #expect(status { _ = try client.info("bad/name") } == errSecParam)
    }

    @Test func itemMethods() throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        let client = session.client
        let item: WireDictionary = ["class": .string("genp"), "svce": .string("s"), "acct": .string("a"), "v_Data": .data(Data("p".utf8))]
        #expect(try client.add(item) == [:])
        #expect(status { try client.add(item) } == errSecDuplicateItem)
        let found = try client.copyMatching(["class": .string("genp"), "r_Attributes": .bool(true), "r_Data": .bool(true),
                                             "m_Limit": .string("m_LimitAll")])
        #expect(found.count == 1)
        #expect(found.first?["acct"] == .string("a"))
        #expect(found.first?["v_Data"] == .data(Data("p".utf8)))
        #expect(found.first?["cdat"]?.integerValue != nil)
        try client.update(["class": .string("genp"), "acct": .string("a")], attributes: ["labl": .string("L")])
        #expect(try client.copyMatching(["class": .string("genp"), "labl": .string("L")]).count == 1)
        try client.delete(["class": .string("genp")])
        #expect(status { _ = try client.copyMatching(["class": .string("genp")]) } == errSecItemNotFound)
        #expect(try client.info("login").itemCount == 0)
    }

    @Test func pathAddressedKeychain() throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        let folder = try session.bus.directory.createDirectory("elsewhere")
        let path = folder + "/custom.keychain-db"
        try session.run {
            let (status, created) = Keychains.create(path, password: "pw")
            #expect(status == errSecSuccess)
            let keychain = try #require(created)
            #expect(Keychains.path(keychain) == (errSecSuccess, path))
            #expect(Keychains.savePassword(in: keychain, service: "s", account: "a", password: "far") == errSecSuccess)
            #expect(Keychains.readPassword(from: [keychain], service: "s", account: "a") == (errSecSuccess, "far"))
            #expect(FileManager.default.fileExists(atPath: path))
        }
    }

    @Test func concurrentCallsOnOneConnection() async throws {
        let session = try KeychainDaemonBus().withLoginKeychain()
        let results = await KeywellClient.withDefault(session.client) {
            await withTaskGroup(of: OSStatus.self) { group in
                for index in 0..<16 {
                    group.addTask {
                        let saved = PasswordStore.save(service: "parallel", account: "user\(index)", password: "pw\(index)")
                        guard saved == errSecSuccess else { return saved }
                        let (status, password) = PasswordStore.read(service: "parallel", account: "user\(index)")
                        return password == "pw\(index)" ? status : errSecDecode
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(results == Array(repeating: errSecSuccess, count: 16))
        #expect(try session.client.info("login").itemCount == 16)
    }
}
