import Foundation
import KeywellProtocol
import Testing

@testable import KeywellCore

@Suite struct LockingTests {
    @Test func unlockChecksThePasswordAndSignalsOnlyChanges() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        let events = EventRecorder(store)
        try store.lock("work")
        #expect(events.take() == [.locked("work")])
        try store.lock("work")
        #expect(events.take() == [])

        expectStatus(SecStatus.authFailed) { try store.unlock("work", password: secret("wrong")) }
        #expect(try store.isLocked("work"))
        #expect(events.take() == [])

        try store.unlock("work", password: secret("pw"))
        #expect(events.take() == [.unlocked("work")])
        try store.unlock("work", password: secret("pw"))
        #expect(events.take() == [])

        // A wrong password is refused even while unlocked, and changes nothing.
        expectStatus(SecStatus.authFailed) { try store.unlock("work", password: secret("wrong")) }
        #expect(try store.isLocked("work") == false)
    }

    @Test func aWrongPasswordLeavesTheFileUntouched() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        let headerQuery = "SELECT hex(kdf_salt) || hex(wrap_nonce) || hex(wrapped_key) FROM keychain"
        let before = try sqlite(environment.path(of: "work"), headerQuery)
        expectStatus(SecStatus.authFailed) { try store.changePassword("work", old: secret("wrong"), new: secret("new")) }
        try store.lock("work")
        expectStatus(SecStatus.authFailed) { try store.unlock("work", password: secret("wrong")) }
        #expect(try sqlite(environment.path(of: "work"), headerQuery) == before)
        try store.unlock("work", password: secret("pw"))
    }

    @Test func lockAllLocksEveryUnlockedKeychainOnce() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["a", "b", "c"])
        try store.lock("b")
        let events = EventRecorder(store)
        store.lockAll()
        #expect(events.take() == [.locked("a"), .locked("c")])
        store.lockAll()
        #expect(events.take() == [])
        for name in ["a", "b", "c"] { #expect(try store.isLocked(name)) }
    }

    @Test(arguments: [true, false])
    func changePasswordKeepsTheLockStateAndTheItems(startLocked: Bool) throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        _ = try store.add(genp("a", "s", [WireKey.valueData: data("kept"), WireKey.useKeychain: .string("work")]))
        if startLocked { try store.lock("work") }
        let events = EventRecorder(store)
        try store.changePassword("work", old: secret("pw"), new: secret("new pw"))
        #expect(try store.isLocked("work") == startLocked)
        #expect(events.take() == [])
        try store.lock("work")
        expectStatus(SecStatus.authFailed) { try store.unlock("work", password: secret("pw")) }
        try store.unlock("work", password: secret("new pw"))
        let found = try store.copyMatching(genp("a", "s", [WireKey.useKeychain: .string("work")]) + returnData)
        #expect(found == [[WireKey.valueData: data("kept")]])
        // A new store (a restarted daemon) sees the new password too.
        let reopened = try environment.makeStore()
        try reopened.unlock("work", password: secret("new pw"))
    }

    @Test func changePasswordUsesTheStoresCurrentParameters() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        let stronger = KDFParameters(opsLimit: 2, memLimit: 1 << 20)
        let upgrading = try environment.makeStore(kdf: stronger)
        try upgrading.changePassword("work", old: secret("pw"), new: secret("pw"))
        let limits = try sqlite(environment.path(of: "work"), "SELECT kdf_ops_limit || ',' || kdf_mem_limit FROM keychain")
        #expect(limits == "2,\(1 << 20)")
        try store.lock("work")
        try store.unlock("work", password: secret("pw"))
    }

    @Test func settingsChangeOnlyTheGivenKeysAndLiveInTheFile() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        try store.setSettings("work", [KeychainInfoKey.lockAfterSeconds: .integer(60)])
        var info = try store.info("work")
        #expect(info[KeychainInfoKey.lockAfterSeconds] == .integer(60))
        #expect(info[KeychainInfoKey.lockOnSleep] == .bool(true))
        try store.setSettings("work", [KeychainInfoKey.lockOnSleep: .bool(false)])
        info = try environment.makeStore().info("work")
        #expect(info[KeychainInfoKey.lockAfterSeconds] == .integer(60))
        #expect(info[KeychainInfoKey.lockOnSleep] == .bool(false))

        expectStatus(SecStatus.param) { try store.setSettings("work", ["lockAfter": .integer(1)]) }
        expectStatus(SecStatus.param) { try store.setSettings("work", [KeychainInfoKey.lockAfterSeconds: .integer(-1)]) }
        expectStatus(SecStatus.param) { try store.setSettings("work", [KeychainInfoKey.lockAfterSeconds: .string("5")]) }
        expectStatus(SecStatus.param) {
            try store.setSettings("work", [KeychainInfoKey.lockOnSleep: .bool(true), "bogus": .bool(true)])
        }
        // A refused call changes nothing, not even its valid keys.
        #expect(try store.info("work")[KeychainInfoKey.lockOnSleep] == .bool(false))
    }

    @Test func infoWorksWhileLockedAndCountsItems() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        let use: WireDictionary = [WireKey.useKeychain: .string("work")]
        for index in 0..<3 { _ = try store.add(genp("a\(index)", "s") + use) }
        try store.lock("work")
        let info = try store.info("work")
        #expect(info[KeychainInfoKey.locked] == .bool(true))
        #expect(info[KeychainInfoKey.itemCount] == .integer(3))
    }

    @Test func idleKeychainsLockAfterTheirTimeoutAndUseRearmsIt() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "work", "short"])
        try store.setSettings("short", [KeychainInfoKey.lockAfterSeconds: .integer(10)])
        let start = Date()
        let deadline = try #require(store.nextIdleDeadline())
        #expect(deadline > start.addingTimeInterval(9) && deadline < start.addingTimeInterval(11))

        let events = EventRecorder(store)
        #expect(store.lockIdleKeychains(now: start.addingTimeInterval(5)) == [])
        #expect(store.lockIdleKeychains(now: start.addingTimeInterval(11)) == ["short"])
        #expect(events.take() == [.locked("short")])
        #expect(store.lockIdleKeychains(now: start.addingTimeInterval(12)) == [])

        // Using "work" re-arms its 300 s timer; login (0) never locks by itself.
        Thread.sleep(forTimeInterval: 0.05)
        let used = Date()
        // Even a search that finds nothing is use.
        _ = try? store.copyMatching(genp("nobody", "s") + [WireKey.useKeychain: .string("work")])
        #expect(store.lockIdleKeychains(now: start.addingTimeInterval(300.01)) == [])
        #expect(store.nextIdleDeadline()! >= used.addingTimeInterval(300))
        #expect(store.lockIdleKeychains(now: used.addingTimeInterval(301)) == ["work"])
        #expect(store.lockIdleKeychains(now: start.addingTimeInterval(1_000_000)) == [])
        #expect(try store.isLocked("login") == false)
        #expect(store.nextIdleDeadline() == nil)
    }

    /// Issue 21: lowering the timeout of a keychain idle longer than the new value must not lock
    /// it at once; changing settings (and the password) is use, as macOS's setParameters is.
    @Test func changingSettingsOrThePasswordRearmsTheIdleTimer() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        let file = try store.file(at: store.location("work"))
        file.markUsed(at: Date().addingTimeInterval(-3600))
        let changed = Date()
        try store.setSettings("work", [KeychainInfoKey.lockAfterSeconds: .integer(60)])
        #expect(store.lockIdleKeychains(now: Date()) == [])
        #expect(try #require(store.nextIdleDeadline()) >= changed.addingTimeInterval(60))
        // It still locks once the new timeout passes without use.
        #expect(store.lockIdleKeychains(now: Date().addingTimeInterval(61)) == ["work"])

        try store.unlock("work", password: secret("pw"))
        file.markUsed(at: Date().addingTimeInterval(-3600))
        try store.changePassword("work", old: secret("pw"), new: secret("new"))
        #expect(store.lockIdleKeychains(now: Date()) == [])
    }

    @Test func sleepLocksOnlyKeychainsSetToLockOnSleep() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "work", "awake"])
        try store.setSettings("awake", [KeychainInfoKey.lockOnSleep: .bool(false)])
        let events = EventRecorder(store)
        #expect(store.lockForSleep() == ["work"])
        #expect(events.take() == [.locked("work")])
        #expect(store.lockForSleep() == [])
    }

    @Test func screenLockLocksOnlyKeychainsSetToLockOnScreenLock() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "work", "open", "asleep"])
        try store.setSettings("open", [KeychainInfoKey.lockOnScreenLock: .bool(false)])
        // Independent of the sleep setting.
        try store.setSettings("asleep", [KeychainInfoKey.lockOnSleep: .bool(false)])
        try store.setSettings("login", [KeychainInfoKey.lockOnScreenLock: .bool(false)])
        let events = EventRecorder(store)
        #expect(store.lockForScreenLock().sorted() == ["asleep", "work"])
        #expect(events.take().map { "\($0)" }.sorted() == ["\(KeychainEvent.locked("asleep"))", "\(KeychainEvent.locked("work"))"])
        #expect(store.lockForScreenLock() == [])
        #expect(try store.isLocked("login") == false && store.isLocked("open") == false)
    }

    /// Files made before the setting existed have no column for it: they read as off, their
    /// header MAC still verifies, and turning it on adds the column.
    @Test func keychainsWithoutTheScreenLockColumnReadAsOffAndGainIt() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        let path = environment.path(of: "work")
        try store.setSettings("work", [KeychainInfoKey.lockOnScreenLock: .bool(false)])
        try store.lock("work")
        try sqlite(path, "ALTER TABLE keychain DROP COLUMN lock_on_screen_lock")
        let reopened = try environment.makeStore()
        try reopened.unlock("work", password: secret("pw"))
        #expect(try reopened.info("work")[KeychainInfoKey.lockOnScreenLock] == .bool(false))
        #expect(reopened.lockForScreenLock() == [])
        try reopened.setSettings("work", [KeychainInfoKey.lockOnScreenLock: .bool(true)])
        #expect(try sqlite(path, "SELECT lock_on_screen_lock FROM keychain") == "1")
        try reopened.lock("work")
        try environment.makeStore().unlock("work", password: secret("pw"))
        #expect(try environment.makeStore().info("work")[KeychainInfoKey.lockOnScreenLock] == .bool(true))
    }

    @Test func secretBytesCopyAndReportTheirLength() {
        let bytes = SecretBytes(copying: [1, 2, 3])
        #expect(bytes.count == 3)
        #expect(bytes.withUnsafeBytes { Array($0) } == [1, 2, 3])
        #expect(SecretBytes(count: 0).withUnsafeBytes { $0.count } == 0)
        #expect(SecretBytes(count: 4).withUnsafeBytes { Array($0) } == [0, 0, 0, 0])
    }
}
