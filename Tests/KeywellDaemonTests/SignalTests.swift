import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// Every signal, once per change, and none when nothing changed.
@Suite struct SignalTests {
    @Test func everySignalOnceForItsChange() throws {
        let fixture = try DaemonFixture()
        let recorder = try SignalRecorder(fixture.client)

        try fixture.createKeychain("login")  // a fresh user's default appears
        try fixture.add(genp("a"))
        try fixture.call("Update", [.stringVariantDict(genp("a")), .stringVariantDict(["labl": "l"])])
        try fixture.call("Delete", [.stringVariantDict(genp("a"))])
        try fixture.call("Lock", ["login"])
        try fixture.call("Unlock", ["login", secret("pw")])
        try fixture.createKeychain("work")
        try fixture.call("SetDefaultKeychain", ["work"])
        try fixture.call("SetSearchList", [.stringArray(["work", "login"])])
        #expect(try recorder.signals(before: fixture) == [
            signal("DefaultKeychainChanged", "login"),
            signal("ItemsChanged", "login"),
            signal("ItemsChanged", "login"),
            signal("ItemsChanged", "login"),
            signal("KeychainLocked", "login"),
            signal("KeychainUnlocked", "login"),
            signal("DefaultKeychainChanged", "work"),
            // A search list never set follows the default keychain.
            .init(member: "SearchListChanged", argument: .stringArray(["work"])),
            .init(member: "SearchListChanged", argument: .stringArray(["work", "login"])),
        ])
    }

    @Test func lockAllAndDeletingTheDefault() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("a")
        try fixture.createKeychain("b")
        try fixture.call("SetDefaultKeychain", ["a"])
        try fixture.call("SetSearchList", [.stringArray(["a", "b"])])
        let recorder = try SignalRecorder(fixture.client)
        try fixture.call("LockAll")
        try fixture.call("DeleteKeychain", ["a"])
        let received = try recorder.signals(before: fixture)
        #expect(received == [
            signal("KeychainLocked", "a"),
            signal("KeychainLocked", "b"),
            signal("DefaultKeychainChanged", ""),
            .init(member: "SearchListChanged", argument: .stringArray(["b"])),
        ])
    }

    @Test func noSignalWhenNothingChanged() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        try fixture.add(genp("a"))
        try fixture.call("Lock", ["login"])
        let recorder = try SignalRecorder(fixture.client)
        try fixture.call("Lock", ["login"])  // already locked
        try fixture.call("LockAll")
        _ = try? fixture.add(genp("b"))  // refused: locked
        _ = try? fixture.call("Unlock", ["login", secret("wrong")])
        _ = try? fixture.call("Delete", [.stringVariantDict(genp("none"))])
        _ = try fixture.copyMatching(genp("a"))
        try fixture.call("SetDefaultKeychain", ["login"])  // already the default
        try fixture.call("SetSearchList", [.stringArray(["login"])])  // the same list
        _ = try? fixture.call("SetSettings", ["login", .stringVariantDict(["lockOnSleep": true])])  // refused: locked
        try fixture.call("Unlock", ["login", secret("pw")])
        try fixture.call("SetSettings", ["login", .stringVariantDict(["lockOnSleep": true])])  // sends nothing
        try fixture.call("Unlock", ["login", secret("pw")])  // already unlocked
        #expect(try recorder.signals(before: fixture) == [signal("KeychainUnlocked", "login")])
    }
}
