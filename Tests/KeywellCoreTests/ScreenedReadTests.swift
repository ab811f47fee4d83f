import Foundation
import KeywellProtocol
import KeywellSystem
import Testing

@testable import KeywellCore

/// The faces' one read per call (`screenedRead`, docs/performance.md "One read per call"): the
/// verdict comes from the list read with the item, is kept only within the read (or, for a list
/// that trusts the caller, under its text for the connection), so a list that changes, or a
/// keychain that locks, is judged afresh on the next read; secrets go only to allowed items.
@Suite struct ScreenedReadTests {
    private static let me = "flatpak:org.example.Me"
    private static let stranger = "flatpak:org.example.Stranger"

    /// Trusts a list naming `me` (or open to all); asks about any other. Counts its verdicts.
    final class CountingScreen: ItemAccessScreening, Sendable {
        let mayHide = false
        private let count = Protected(0)
        var verdicts: Int { count.withLock { $0 } }

        func verdict(_ list: AccessList, item: () -> AccessItem) -> AccessVerdict {
            count.withLock { $0 += 1 }
            guard case .applications(let identities) = list, !identities.contains(ScreenedReadTests.me) else { return .allowed }
            return .mustAsk
        }

        func ask(about items: [AccessItem], interactionAllowed: Bool) throws(KeychainError) {}
    }

    /// `CountingScreen` that keeps, as the Secret Service does per connection, the list texts
    /// found to trust its caller.
    final class KeepingScreen: ItemAccessScreening, Sendable {
        let counting = CountingScreen()
        let trustingLists: TrustingLists? = TrustingLists()
        var mayHide: Bool { counting.mayHide }
        var verdicts: Int { counting.verdicts }

        func verdict(_ list: AccessList, item: () -> AccessItem) -> AccessVerdict { counting.verdict(list, item: item) }
        func ask(about items: [AccessItem], interactionAllowed: Bool) throws(KeychainError) {}
    }

    private func add(_ store: KeychainStore, _ account: String, _ list: [String]) throws {
        _ = try store.add(genp(account, "s", [WireKey.access: .strings(list), WireKey.valueData: data("secret of \(account)")]))
    }

    private func setList(_ store: KeychainStore, _ account: String, _ list: [String]) throws {
        try store.update(genp(account, "s"), [WireKey.access: .strings(list)])
    }

    private func verdicts(_ read: ScreenedRead) -> [AccessVerdict] { read.items.map(\.verdict) }
    private func secrets(_ read: ScreenedRead) -> [Data?] { read.items.map { $0.secret?.value } }

    private func secret(_ account: String) -> Data? { Data("secret of \(account)".utf8) }

    private let every = FreeformSelection.matching([:], native: [:])

    @Test func aListThatChangesIsJudgedAfreshByTheNextRead() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        try add(store, "mine", [Self.me])
        try add(store, "theirs", [Self.stranger])
        let screen = CountingScreen()
        var read = try store.screenedRead(every, in: "login", screen: screen, secrets: true)
        #expect(verdicts(read) == [.allowed, .mustAsk])
        #expect(secrets(read) == [secret("mine"), nil], "no secret is opened for an item the caller must be asked about")

        // The Allow the list gave is gone once the list no longer names the caller, and the
        // other item's new list lets it in: nothing of the last read's verdicts survives.
        try setList(store, "mine", [Self.stranger])
        try setList(store, "theirs", [Self.stranger, Self.me])
        read = try store.screenedRead(every, in: "login", screen: screen, secrets: true)
        #expect(verdicts(read) == [.mustAsk, .allowed])
        #expect(secrets(read) == [nil, secret("theirs")])

        // Locked: verdicts from the lists, no secret, and `locked` says why.
        try store.lock("login")
        read = try store.screenedRead(every, in: "login", screen: screen, secrets: true)
        #expect(read.locked)
        #expect(verdicts(read) == [.mustAsk, .allowed])
        #expect(secrets(read) == [nil, nil])
    }

    @Test func aListSharedByManyItemsIsJudgedOncePerRead() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        for index in 0..<5 { try add(store, "mine\(index)", [Self.me]) }
        try add(store, "theirs", [Self.stranger])
        let screen = CountingScreen()
        let read = try store.screenedRead(every, in: "login", screen: screen, secrets: true)
        #expect(read.items.filter { $0.verdict == .allowed }.count == 5)
        #expect(screen.verdicts == 2, "one verdict per distinct list")
        let again = try store.screenedRead(every, in: "login", screen: screen, secrets: false)
        #expect(screen.verdicts == 4, "a new read judges again")
        #expect(again.items.allSatisfy { $0.secret == nil })
    }

    @Test func aListFoundToTrustTheCallerIsNotJudgedAgainUntilItChanges() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        for index in 0..<3 { try add(store, "mine\(index)", [Self.me]) }
        try add(store, "theirs", [Self.stranger])
        let screen = KeepingScreen()
        var read = try store.screenedRead(every, in: "login", screen: screen, secrets: true)
        #expect(verdicts(read) == [.allowed, .allowed, .allowed, .mustAsk])
        #expect(screen.verdicts == 2)

        read = try store.screenedRead(every, in: "login", screen: screen, secrets: true)
        #expect(verdicts(read) == [.allowed, .allowed, .allowed, .mustAsk])
        #expect(secrets(read) == [secret("mine0"), secret("mine1"), secret("mine2"), nil])
        #expect(screen.verdicts == 3, "only the list that does not trust the caller is judged again")

        // A changed list is another text: judged afresh, whatever was kept for the old one.
        try setList(store, "mine0", [Self.stranger, Self.me])
        try setList(store, "mine1", [Self.stranger])
        read = try store.screenedRead(every, in: "login", screen: screen, secrets: true)
        #expect(verdicts(read) == [.allowed, .mustAsk, .allowed, .mustAsk])
        #expect(secrets(read) == [secret("mine0"), nil, secret("mine2"), nil])
        #expect(screen.verdicts == 5, "the new trusting list and the untrusting one, once each")
    }

    /// A read of many rows opens its secrets on two threads (`TwoHalves`): the same verdicts
    /// and secrets, in the same order, as a read of a few, either side of the split; an item
    /// the caller must be asked about gets none, wherever it falls.
    @Test func aReadOfManyOpensAsAReadOfFew() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        let count = 2 * TwoHalves.minimumItems + 5
        for index in 0..<count { try add(store, "item\(index)", index % 7 == 3 ? [Self.stranger] : [Self.me]) }
        let ids = try store.screenedRead(every, in: "login", screen: nil, secrets: false).items.map(\.id)
        #expect(ids.count == count)
        let screen = CountingScreen()
        func expected(_ asked: [UUID]) throws -> [Data?] {
            // One id a read: never split.
            try asked.map { try store.screenedRead(.ids([$0]), in: "login", screen: screen, secrets: true).items.first?.secret?.value }
        }
        let unknown = UUID()
        for asked in [Array(ids.prefix(TwoHalves.minimumItems - 1)), Array(ids.prefix(TwoHalves.minimumItems)),
                      Array(ids.reversed()), ids + [unknown] + ids.prefix(3)] {
            let read = try store.screenedRead(.ids(asked), in: "login", screen: screen, secrets: true)
            let known = asked.filter { $0 != unknown }
            #expect(read.items.map(\.id) == known)
            #expect(secrets(read) == (try expected(known)))
            #expect(read.items.filter { $0.secret == nil }.allSatisfy { $0.verdict == .mustAsk })
        }
        let all = try store.screenedRead(every, in: "login", screen: screen, secrets: true)
        #expect(secrets(all) == (0..<count).map { $0 % 7 == 3 ? nil : secret("item\($0)") })
    }

    @Test func idsComeBackInTheOrderAskedWithoutUnknownOnes() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        for index in 0..<3 { try add(store, "item\(index)", [Self.me]) }
        let ids = try store.screenedRead(every, in: "login", screen: nil, secrets: false).items.map(\.id)
        let asked = [ids[2], UUID(), ids[0], ids[1]]
        let read = try store.screenedRead(.ids(asked), in: "login", screen: nil, secrets: true)
        #expect(read.items.map(\.id) == [ids[2], ids[0], ids[1]])
        #expect(secrets(read) == [secret("item2"), secret("item0"), secret("item1")])
        try store.lock("login")
        let locked = try store.screenedRead(.ids(asked), in: "login", screen: nil, secrets: true)
        #expect(locked.locked && locked.items.map(\.id) == [ids[2], ids[0], ids[1]], "locked: the same items, no unknown one")
        #expect(secrets(locked) == [nil, nil, nil])
    }
}
