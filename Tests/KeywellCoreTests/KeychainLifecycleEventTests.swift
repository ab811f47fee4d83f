import Foundation
import KeywellProtocol
import KeywellSystem
import Testing

@testable import KeywellCore

/// Keychains made and removed reach `observeKeychains` observers (the Secret Service's
/// CollectionCreated / CollectionDeleted), whoever made them; `onEvent` carries only what the
/// native API signals.
@Suite struct KeychainLifecycleEventTests {
    /// Both streams in the order they arrive.
    // @unchecked: what it records is only touched under `lock`.
    final class Recorder: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [String] = []

        init(_ store: KeychainStore) {
            store.observeKeychains { [weak self] event in
                switch event {
                case .created(let name): self?.append("created \(name)")
                case .deleted(let name): self?.append("deleted \(name)")
                }
            }
            store.onEvent = { [weak self] event in self?.append("\(event)") }
        }

        private func append(_ line: String) { lock.withLock { seen.append(line) } }

        func take() -> [String] {
            lock.withLock {
                defer { seen = [] }
                return seen
            }
        }
    }

    @Test func createAndDeleteAreAnnouncedBeforeWhatTheyChangedInTheSettings() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        let recorder = Recorder(store)
        _ = try store.createKeychain("login", password: secret("pw"))
        #expect(recorder.take() == ["created login", "defaultKeychainChanged(\"login\")"])
        _ = try store.createKeychain("work", password: secret("pw"))
        #expect(recorder.take() == ["created work"])
        try store.setSearchList(["login", "work"])
        #expect(recorder.take() == ["searchListChanged([\"login\", \"work\"])"])
        try store.deleteKeychain("work")
        #expect(recorder.take() == ["deleted work", "searchListChanged([\"login\"])"])
    }

    @Test func refusedCallsAnnounceNothing() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        let recorder = Recorder(store)
        expectStatus(SecStatus.duplicateKeychain) { _ = try store.createKeychain("work", password: secret("x")) }
        expectStatus(SecStatus.noSuchKeychain) { try store.deleteKeychain("ghost") }
        expectStatus(SecStatus.param) { _ = try store.createKeychain("bad/name", password: secret("x")) }
        #expect(recorder.take() == [])
    }

    @Test func everyObserverHearsEveryChangeAndANewStoreStartsWithNone() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        let first = Recorder(store)
        let second = Recorder(store)
        _ = try store.createKeychain("a", password: secret("pw"))
        #expect(first.take().contains("created a"))
        #expect(second.take().contains("created a"))
        // Another store over the same folders has observers of its own only.
        let other = try environment.makeStore()
        let third = Recorder(other)
        try other.deleteKeychain("a")
        #expect(third.take() == ["deleted a"])
        #expect(first.take() == [] && second.take() == [])
    }

    @Test func pathAddressedKeychainsAreAnnouncedByTheirPath() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        let recorder = Recorder(store)
        let folder = environment.root.appendingPathComponent("elsewhere").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let path = folder + "/x.keychain-db"
        _ = try store.createKeychain(path, password: secret("pw"))
        try store.deleteKeychain(path)
        #expect(recorder.take() == ["created \(path)", "deleted \(path)"])
    }
}

/// A keychain's label: in the keychain file, optional, format version unchanged.
@Suite struct KeychainLabelTests {
    @Test func aKeychainHasNoLabelUntilOneIsSet() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        #expect(try store.keychainLabel("work") == nil)
        try store.setKeychainLabel("work", "Work — 仕事")
        #expect(try store.keychainLabel("work") == "Work — 仕事")
        try store.setKeychainLabel("work", "")
        #expect(try store.keychainLabel("work") == "", "an empty label is a label")
        // It is in the file: another store reads it, and the file still opens as format 1.
        try store.setKeychainLabel("work", "Work")
        let reopened = try environment.makeStore()
        #expect(try reopened.keychainLabel("work") == "Work")
        try reopened.unlock("work", password: secret("pw"))
        #expect(try reopened.info("work")[KeychainInfoKey.name] == .string("work"))
    }

    @Test func aLabelGivenAtCreationIsThereFromTheStart() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore()
        let labels = Protected<[String?]>([])
        store.observeKeychains { [store] event in
            if case .created(let name) = event { labels.withLock { $0.append(try? store.keychainLabel(name)) } }
        }
        _ = try store.createKeychain("keys", password: secret("pw"), label: "My keys")
        #expect(labels.read { $0 } == ["My keys"], "observers already see the label")
        #expect(try store.keychainLabel("keys") == "My keys")
    }

    @Test func labelsSurviveAPasswordChangeAndSettings() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        try store.setKeychainLabel("work", "Work")
        try store.changePassword("work", old: secret("pw"), new: secret("new"))
        try store.setSettings("work", [KeychainInfoKey.lockAfterSeconds: .integer(10)])
        #expect(try store.keychainLabel("work") == "Work")
    }

    @Test func changingALabelNeedsTheKeychainUnlockedReadingItDoesNot() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["work"])
        try store.setKeychainLabel("work", "Work")
        try store.lock("work")
        #expect(try store.keychainLabel("work") == "Work")
        expectStatus(SecStatus.interactionNotAllowed) { try store.setKeychainLabel("work", "Other") }
        expectStatus(SecStatus.noSuchKeychain) { _ = try store.keychainLabel("ghost") }
        expectStatus(SecStatus.noSuchKeychain) { try store.setKeychainLabel("ghost", "x") }
        try store.unlock("work", password: secret("pw"))
        expectStatus(SecStatus.param) { try store.setKeychainLabel("work", String(repeating: "x", count: 1025)) }
        expectStatus(SecStatus.param) { _ = try store.createKeychain("long", password: secret("pw"), label: String(repeating: "x", count: 1025)) }
        #expect(!store.keychainExists("long"), "refused before anything was made")
        #expect(try store.keychainLabel("work") == "Work")
    }
}

/// Which items each call made, changed or deleted reach `observeItems` observers (the Secret
/// Service's ItemCreated / ItemChanged / ItemDeleted), right before that call's `itemsChanged`.
@Suite struct KeychainItemsEventTests {
    // @unchecked: what it records is only touched under `lock`.
    final class Recorder: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [String] = []
        private var events: [KeychainItemsEvent] = []

        init(_ store: KeychainStore) {
            store.observeItems { [weak self] event in
                self?.lock.withLock {
                    self?.events.append(event)
                    self?.seen.append("items \(event.keychain) +\(event.created.count) ~\(event.changed.count) -\(event.deleted.count)")
                }
            }
            store.onEvent = { [weak self] event in self?.lock.withLock { self?.seen.append("\(event)") } }
        }

        func take() -> (lines: [String], events: [KeychainItemsEvent]) {
            lock.withLock {
                defer { (seen, events) = ([], []) }
                return (seen, events)
            }
        }
    }

    @Test func addUpdateAndDeleteNameTheirItemsBeforeItemsChanged() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login", "work"])
        let recorder = Recorder(store)
        let genp: (String, String) -> WireDictionary = { account, keychain in
            [WireKey.class: .string("genp"), "svce": .string("s"), "acct": .string(account),
             "v_Data": .data(Data("pw".utf8)), "u_Keychain": .string(keychain)]
        }
        _ = try store.add(genp("one", "login"))
        let added = recorder.take()
        #expect(added.lines == ["items login +1 ~0 -0", "itemsChanged(\"login\")"])
        let made = try #require(added.events.first?.created.first)
        #expect(try store.itemIDs(in: "login") == [made])

        try store.addBatch([genp("two", "login"), genp("three", "work")])
        let batch = recorder.take()
        #expect(Set(batch.lines) == ["items login +1 ~0 -0", "items work +1 ~0 -0", "itemsChanged(\"login\")", "itemsChanged(\"work\")"])
        #expect(batch.lines.firstIndex(of: "items login +1 ~0 -0")! < batch.lines.firstIndex(of: "itemsChanged(\"login\")")!)

        try store.update([WireKey.class: .string("genp"), "acct": .string("one"), "u_Keychain": .string("login")],
                         ["labl": .string("renamed")])
        let updated = recorder.take()
        #expect(updated.lines == ["items login +0 ~1 -0", "itemsChanged(\"login\")"])
        #expect(updated.events.first?.changed == [made])

        try store.delete([WireKey.class: .string("genp"), "u_Keychain": .string("login")])
        let deleted = recorder.take()
        #expect(deleted.lines == ["items login +0 ~0 -2", "itemsChanged(\"login\")"])
        #expect(deleted.events.first?.deleted.contains(made) == true)

        expectStatus(SecStatus.itemNotFound) { try store.delete([WireKey.class: .string("genp"), "u_Keychain": .string("login")]) }
        #expect(recorder.take().lines == [], "a refused call names no item")
    }
}
