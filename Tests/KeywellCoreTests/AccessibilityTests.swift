import Foundation
import KeywellProtocol
import KeywellSecretService
import Testing

@testable import KeywellCore

/// `pdmn` honoured (docs/access-control.md, "Accessibility"): AfterFirstUnlock secrets through
/// automatic locks, ThisDeviceOnly items kept out of exports, unknown values refused.
@Suite struct AccessibilityTests {
    static func item(_ account: String, _ accessibility: Accessibility, _ value: String) -> WireDictionary {
        genp(account, "svc", [
            WireKey.useKeychain: .string("work"), WireKey.valueData: data(value),
            AttributeKey.accessible: .string(accessibility.rawValue),
        ])
    }

    static func secretOf(_ account: String, _ store: KeychainStore) throws -> String? {
        let found = try store.copyMatching(genp(account, "svc", [WireKey.useKeychain: .string("work"), WireKey.returnData: .bool(true)]))
        return found.first?[WireKey.valueData]?.dataValue.map { String(decoding: $0, as: UTF8.self) }
    }

    /// A store whose `work` keychain locks after 10 idle seconds, holding an AfterFirstUnlock
    /// item `after` and a WhenUnlocked item `when`.
    static func storeWithBoth(_ environment: TestEnvironment) throws -> KeychainStore {
        let store = try environment.makeStore(with: ["work"])
        try store.setSettings("work", [KeychainInfoKey.lockAfterSeconds: .integer(10)])
        _ = try store.add(item("after", .afterFirstUnlock, "after-secret"))
        _ = try store.add(item("when", .whenUnlocked, "when-secret"))
        return store
    }

    static func lockByIdleTimer(_ store: KeychainStore) {
        #expect(store.lockIdleKeychains(now: Date().addingTimeInterval(11)) == ["work"])
    }

    @Test func anAfterFirstUnlockSecretStaysReadableThroughEveryAutomaticLock() throws {
        let environment = try TestEnvironment()
        let store = try Self.storeWithBoth(environment)
        try store.setSettings("work", [KeychainInfoKey.lockOnScreenLock: .bool(true), KeychainInfoKey.lockOnSleep: .bool(true)])
        for lock in [{ Self.lockByIdleTimer(store) }, { #expect(store.lockForScreenLock() == ["work"]) },
                     { #expect(store.lockForSleep() == ["work"]) }] {
            lock()
            #expect(try store.isLocked("work"))
            #expect(try Self.secretOf("after", store) == "after-secret")
            expectStatus(SecStatus.interactionNotAllowed) { _ = try Self.secretOf("when", store) }
            // A search over both answers with the readable one only.
            let both = try store.copyMatching([
                WireKey.class: .string(WireKey.classGenericPassword), WireKey.useKeychain: .string("work"),
                WireKey.returnData: .bool(true), WireKey.returnAttributes: .bool(true), WireKey.matchLimit: .string(WireKey.matchLimitAll),
            ])
            #expect(both.map { $0[AttributeKey.account]?.stringValue } == ["after"])
            // A limit of one still finds the readable item when the other matches first.
            let first = try store.copyMatching([
                WireKey.class: .string(WireKey.classGenericPassword), WireKey.useKeychain: .string("work"), WireKey.returnData: .bool(true),
            ])
            #expect(first.count == 1 && first[0][WireKey.valueData]?.dataValue == Data("after-secret".utf8))
            try store.unlock("work", password: secret("pw"))
        }
    }

    @Test func anExplicitLockOrTheLastLogoutDropsTheCopies() throws {
        let environment = try TestEnvironment()
        let store = try Self.storeWithBoth(environment)
        try store.lock("work")
        expectStatus(SecStatus.interactionNotAllowed) { _ = try Self.secretOf("after", store) }

        // An explicit lock after an automatic one drops them too.
        try store.unlock("work", password: secret("pw"))
        Self.lockByIdleTimer(store)
        #expect(try Self.secretOf("after", store) == "after-secret")
        try store.lock("work")
        expectStatus(SecStatus.interactionNotAllowed) { _ = try Self.secretOf("after", store) }

        // Logout, whatever the lock state.
        try store.unlock("work", password: secret("pw"))
        Self.lockByIdleTimer(store)
        store.dropSessionSecrets()
        expectStatus(SecStatus.interactionNotAllowed) { _ = try Self.secretOf("after", store) }

        // Unlocking again keeps them again.
        try store.unlock("work", password: secret("pw"))
        Self.lockByIdleTimer(store)
        #expect(try Self.secretOf("after", store) == "after-secret")
    }

    @Test func changesAndDeletionsReachTheCopies() throws {
        let environment = try TestEnvironment()
        let store = try Self.storeWithBoth(environment)
        let query = genp("after", "svc", [WireKey.useKeychain: .string("work")])
        try store.update(query, [WireKey.valueData: data("changed")])
        // when: WhenUnlocked → AfterFirstUnlock; a third item the other way round.
        try store.update(genp("when", "svc", [WireKey.useKeychain: .string("work")]),
                         [AttributeKey.accessible: .string(Accessibility.afterFirstUnlockThisDeviceOnly.rawValue)])
        _ = try store.add(Self.item("third", .alwaysThisDeviceOnly, "third-secret"))
        try store.update(genp("third", "svc", [WireKey.useKeychain: .string("work")]),
                         [AttributeKey.accessible: .string(Accessibility.whenPasscodeSetThisDeviceOnly.rawValue)])
        Self.lockByIdleTimer(store)
        #expect(try Self.secretOf("after", store) == "changed")
        #expect(try Self.secretOf("when", store) == "when-secret")
        expectStatus(SecStatus.interactionNotAllowed) { _ = try Self.secretOf("third", store) }

        try store.unlock("work", password: secret("pw"))
        try store.delete(query)
        Self.lockByIdleTimer(store)
        expectStatus(SecStatus.itemNotFound) { _ = try Self.secretOf("after", store) }
        #expect(try Self.secretOf("when", store) == "when-secret")
    }

    @Test func aSecretServiceSecretChangeReachesTheCopy() throws {
        let environment = try TestEnvironment()
        let store = try Self.storeWithBoth(environment)
        let reference = try #require(try store.copyMatching(genp("after", "svc", [WireKey.useKeychain: .string("work"),
            WireKey.returnPersistentRef: .bool(true)])).first?[WireKey.valuePersistentRef]?.dataValue)
        let itemID = try PersistentRef(parsing: reference).item
        try store.secretServiceSetSecret(SecretServiceSecret(value: Data("via-ss".utf8), contentType: "text/plain"), of: itemID, in: "work")
        Self.lockByIdleTimer(store)
        #expect(try Self.secretOf("after", store) == "via-ss")
        try store.unlock("work", password: secret("pw"))
        try store.secretServiceDeleteItem(itemID, in: "work")
        Self.lockByIdleTimer(store)
        expectStatus(SecStatus.itemNotFound) { _ = try Self.secretOf("after", store) }
    }

    @Test func aValueOutsideTheListIsRefusedAndChangesNothing() throws {
        let environment = try TestEnvironment()
        let store = try Self.storeWithBoth(environment)
        let error = expectStatus(SecStatus.param) {
            _ = try store.add(genp("odd", "svc", [WireKey.useKeychain: .string("work"), WireKey.valueData: data("x"),
                                                  AttributeKey.accessible: .string("always")]))
        }
        #expect(error?.detail?.contains("\"always\"") == true)
        expectStatus(SecStatus.itemNotFound) { _ = try Self.secretOf("odd", store) }
        expectStatus(SecStatus.param) {
            try store.update(genp("when", "svc", [WireKey.useKeychain: .string("work")]), [AttributeKey.accessible: .string("ck ")])
        }
        let stored = try store.copyMatching(genp("when", "svc", [WireKey.useKeychain: .string("work"), WireKey.returnAttributes: .bool(true)]))
        #expect(stored.first?[AttributeKey.accessible]?.stringValue == "ak")
    }

    @Test func anOddStoredValueCountsAsTheDefault() {
        var item = KeychainItem(rowID: nil, uuid: UUID(), itemClass: .genericPassword,
                                attributes: [.accessibility: .text("weird")], sealedSecret: Data())
        #expect(item.accessibility == .whenUnlocked)
        item.attributes[.accessibility] = nil
        #expect(item.accessibility == .whenUnlocked)
        item.attributes[.accessibility] = .text("cku")
        #expect(item.accessibility.survivesAutomaticLock && item.accessibility.isThisDeviceOnly)
        #expect(Accessibility.always.survivesAutomaticLock && !Accessibility.always.isThisDeviceOnly)
        #expect(!Accessibility.whenPasscodeSetThisDeviceOnly.survivesAutomaticLock)
    }

    /// Someone who can write the file turns a WhenUnlocked item into an AfterFirstUnlock one to
    /// read it while locked: its MAC no longer checks, so no copy is kept.
    @Test func aPdmnEditedOnDiskKeepsNoCopy() throws {
        let environment = try TestEnvironment()
        let store = try Self.storeWithBoth(environment)
        try store.lock("work")
        _ = try sqlite(environment.path(of: "work"), "UPDATE item SET pdmn = 'ck', pdmn_n = 'ck' WHERE acct = 'when'")
        try store.unlock("work", password: secret("pw"))
        Self.lockByIdleTimer(store)
        expectStatus(SecStatus.interactionNotAllowed) { _ = try Self.secretOf("when", store) }
    }

    @Test func exportsLeaveThisDeviceOnlyItemsBehind() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        for accessibility in Accessibility.allCases {
            _ = try store.add(Self.item(accessibility.rawValue, accessibility, "s-\(accessibility.rawValue)"))
        }
        let fd = try ExportImportTests.newFile(environment, "export")
        defer { close(fd) }
        let written = try store.exportKeychains(["work"], to: fd, passphrase: secret("pass"))
        #expect(written.items == 3 && written.thisDeviceOnly == 4)
        let target = try TestEnvironment()
        let other = try target.makeStore(with: ["work"])
        lseek(fd, 0, SEEK_SET)
        _ = try other.importExport(from: fd, passphrase: secret("pass"), into: nil, policy: .skip)
        let imported = try other.copyMatching(genp("", "svc", [WireKey.useKeychain: .string("work"), WireKey.returnAttributes: .bool(true),
                                                               WireKey.matchLimit: .string(WireKey.matchLimitAll)]).filter { $0.key != "acct" })
        #expect(Set(imported.compactMap { $0[AttributeKey.account]?.stringValue }) == ["ak", "ck", "dk"])

        // Imported AfterFirstUnlock items are readable after the idle lock like added ones.
        try other.setSettings("work", [KeychainInfoKey.lockAfterSeconds: .integer(10)])
        #expect(other.lockIdleKeychains(now: Date().addingTimeInterval(11)) == ["work"])
        #expect(try Self.secretOf("ck", other) == "s-ck")
        #expect(try Self.secretOf("dk", other) == "s-dk")
        expectStatus(SecStatus.interactionNotAllowed) { _ = try Self.secretOf("ak", other) }

        let portable = try store.portableItemIDs(in: "work")
        #expect(portable.ids.count == 3 && portable.thisDeviceOnly == 4)
    }

    /// An explicit lock that comes while an unlock gathers the copies, or while an add is
    /// between its write and its copy, leaves no copy behind it.
    @Test func aCopyUnderWayWhenAnExplicitLockComesIsNotKept() throws {
        let copies = SessionSecrets()
        let keychain = UUID(), item = UUID()
        let mark = copies.mark
        copies.wipe()
        copies.replaceAll([(item, Data("gathered".utf8))], keychain: keychain, since: mark)
        #expect(copies.isEmpty)
        copies.keep(Data("added".utf8), for: item, keychain: keychain)
        #expect(copies.isEmpty)

        copies.replaceAll([], keychain: keychain, since: copies.mark)
        copies.keep(Data("added".utf8), for: item, keychain: keychain)
        #expect(try copies.secret(for: item, keychain: keychain) == Data("added".utf8))
        // Bound to its keychain and item: no other answers with it.
        #expect(try copies.secret(for: UUID(), keychain: keychain) == nil)
    }
}
