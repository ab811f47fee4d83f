import Foundation
import KeywellProtocol
import KeywellSystem
import Testing

@testable import KeywellCore

/// The one access screening helper (`AccessScreeningRound`), through the engine calls that use
/// it, on a real keychain: hidden items left out, untrusted ones asked about in one question,
/// `u_AuthUI` Skip and Fail, the limit, the export.
@Suite struct AccessScreeningRoundTests {
    private static let me = "flatpak:org.example.Me"
    private static let stranger = "flatpak:org.example.Stranger"
    private static let hider = "flatpak:org.example.Hider"

    /// Stands in for the person and the daemon's gate: a fixed verdict per list, and a fixed
    /// answer to the question. Records every question it is asked.
    final class AnsweringScreen: ItemAccessScreening, Sendable {
        let mayHide: Bool
        private let denies: Bool
        private let questions = Protected<[(items: [AccessItem], interactionAllowed: Bool)]>([])

        init(mayHide: Bool = true, denies: Bool = false) {
            self.mayHide = mayHide
            self.denies = denies
        }

        var asked: [(items: [AccessItem], interactionAllowed: Bool)] { questions.withLock { $0 } }

        func verdict(_ list: AccessList, item: () -> AccessItem) -> AccessVerdict {
            guard case .applications(let identities) = list, !identities.contains(AccessScreeningRoundTests.me) else { return .allowed }
            return identities.contains(AccessScreeningRoundTests.hider) && mayHide ? .hidden : .mustAsk
        }

        func ask(about items: [AccessItem], interactionAllowed: Bool) throws(KeychainError) {
            questions.withLock { $0.append((items, interactionAllowed)) }
            guard interactionAllowed else { throw KeychainError(SecStatus.interactionNotAllowed, detail: "asking forbidden") }
            if denies { throw KeychainError(SecStatus.authFailed, detail: "denied") }
        }
    }

    /// In this order: open to all, mine, hidden from me, and two that need asking.
    private func fill(_ store: KeychainStore) throws {
        let items: [(String, WireValue)] = [
            ("open", .string(WireKey.accessAnyApplication)), ("mine", .strings([Self.me])),
            ("hidden", .strings([Self.hider])), ("asked1", .strings([Self.stranger])), ("asked2", .strings([Self.stranger])),
        ]
        for (account, access) in items {
            _ = try store.add(genp(account, "s", [WireKey.access: access, "labl": .string("Label of \(account)"),
                                                  WireKey.valueData: data("secret of \(account)")]))
        }
    }

    private func accounts(_ results: [WireDictionary]) -> [String] {
        results.compactMap { $0["acct"]?.stringValue }
    }

    private let match: WireDictionary = [WireKey.class: .string("genp"), "svce": .string("s")] + limitAll
    private var all: WireDictionary { match + returnAttributes }

    @Test func untrustedItemsAreAskedAboutInOneQuestionAndHiddenOnesLeftOut() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        try fill(store)
        let screen = AnsweringScreen()
        let results = try store.copyMatching(all + returnData, screen: screen)
        #expect(accounts(results) == ["open", "mine", "asked1", "asked2"])
        #expect(results.map { $0[WireKey.valueData] } == ["open", "mine", "asked1", "asked2"].map { data("secret of \($0)") })
        let asked = screen.asked
        #expect(asked.count == 1)
        #expect(asked.first?.interactionAllowed == true)
        #expect(asked.first?.items.map(\.label) == ["Label of asked1", "Label of asked2"])
        #expect(asked.first?.items.allSatisfy { $0.keychain == environment.path(of: "login") } == true)
    }

    /// The search in two steps, as a read on the D-Bus I/O thread makes it: the read says a
    /// question is left and asks nothing; `finish()` asks it once and returns the results of
    /// that read, even when the keychain changed meanwhile (nothing is read again).
    @Test func aScreenedSearchLeavesItsQuestionToFinish() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        try fill(store)
        let screen = AnsweringScreen()
        let search = try store.items.screenedSearch(all + returnData, screen: screen)
        #expect(search.asks)
        #expect(screen.asked.isEmpty)
        // An item added after the read is not among the results: they are the read's.
        _ = try store.add(genp("late", "s", [WireKey.access: .strings([Self.stranger]), WireKey.valueData: data("late")]))
        let results = try search.finish()
        #expect(accounts(results) == ["open", "mine", "asked1", "asked2"])
        #expect(screen.asked.count == 1)
        #expect(screen.asked.first?.items.map(\.label) == ["Label of asked1", "Label of asked2"])

        let trusted = try store.items.screenedSearch(all + ["acct": .string("mine")] + returnData, screen: screen)
        #expect(!trusted.asks)
        #expect(accounts(try trusted.finish()) == ["mine"])
        #expect(screen.asked.count == 1)
    }

    @Test func aDeniedQuestionFailsTheCallWithTheScreensStatusAndChangesNothing() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        try fill(store)
        let screen = AnsweringScreen(denies: true)
        expectStatus(SecStatus.authFailed) { _ = try store.copyMatching(all + returnData, screen: screen) }
        expectStatus(SecStatus.authFailed) { try store.update(match, ["labl": .string("changed")], screen: screen) }
        expectStatus(SecStatus.authFailed) { try store.delete(match, screen: screen) }
        #expect(screen.asked.count == 3)
        #expect(try store.copyMatching(all).compactMap { $0["labl"]?.stringValue }.allSatisfy { $0.hasPrefix("Label of") })
        #expect(try store.copyMatching(all).count == 5)
    }

    @Test func skipLeavesUntrustedItemsOutUnaskedAndFailRefusesTheQuestion() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        try fill(store)
        let screen = AnsweringScreen()
        let skip: WireDictionary = [WireKey.useAuthenticationUI: .string(WireKey.useAuthenticationUISkip)]
        #expect(accounts(try store.copyMatching(all + returnData + skip, screen: screen)) == ["open", "mine"])
        // Update and delete change only what was judged: the untrusted and hidden items stay.
        try store.delete(match + skip, screen: screen)
        #expect(accounts(try store.copyMatching(all)) == ["hidden", "asked1", "asked2"])
        #expect(screen.asked.isEmpty)

        let fail: WireDictionary = [WireKey.useAuthenticationUI: .string(WireKey.useAuthenticationUIFail)]
        expectStatus(SecStatus.interactionNotAllowed) { _ = try store.copyMatching(all + returnData + fail, screen: screen) }
        #expect(screen.asked.map(\.interactionAllowed) == [false])
    }

    @Test func aSearchForAttributesReturnsUntrustedItemsUnasked() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        try fill(store)
        let screen = AnsweringScreen()
        #expect(accounts(try store.copyMatching(all, screen: screen)) == ["open", "mine", "asked1", "asked2"])
        #expect(screen.asked.isEmpty)
    }

    @Test func itemsPastTheLimitAreNeitherJudgedNorAskedAbout() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        try fill(store)
        let screen = AnsweringScreen()
        let three: WireDictionary = [WireKey.class: .string("genp"), "svce": .string("s"), WireKey.matchLimit: .integer(3)]
        // The hidden item does not take a place: open, mine, then asked1; asked2 is never asked about.
        #expect(accounts(try store.copyMatching(three + returnAttributes + returnData, screen: screen)) == ["open", "mine", "asked1"])
        #expect(screen.asked.map { $0.items.map(\.label) } == [["Label of asked1"]])
    }

    @Test func theExportsAskOnceAndLeaveHiddenItemsBehind() throws {
        let environment = try TestEnvironment()
        let store = try environment.makeStore(with: ["login"])
        try fill(store)
        let screen = AnsweringScreen()
        let fd = try ExportImportTests.newFile(environment, "export")
        defer { close(fd) }
        #expect(try store.exportKeychains(["login"], to: fd, passphrase: secret("pass"), screen: screen).items == 4)
        #expect(screen.asked.map { $0.items.map(\.label) } == [["Label of asked1", "Label of asked2"]])

        // By id, as the gnome-keyring export screens: the question's labels are the face's.
        let ids = try store.itemIDs(in: "login")
        let kept = try store.screened(ids, in: "login", by: screen) { id throws(KeychainError) in "item \(ids.firstIndex(of: id)!)" }
        #expect(kept == [ids[0], ids[1], ids[3], ids[4]])
        #expect(screen.asked.last?.items.map(\.label) == ["item 3", "item 4"])
        let keychain = try store.keychainIdentity("login")
        #expect(screen.asked.last?.items.map(\.reference) == [ids[3], ids[4]].map { Array(PersistentRef(keychain: keychain, item: $0).data) })
        expectStatus(SecStatus.authFailed) {
            _ = try store.screened(ids, in: "login", by: AnsweringScreen(denies: true)) { _ throws(KeychainError) in "" }
        }
    }

    @Test func theRoundItselfStopsAtTheLimitAndNotesOnlyWhatItMayAsk() throws {
        let lists: [String: AccessList] = [
            "open": .anyApplication, "hidden": .applications([Self.hider]), "asked": .applications([Self.stranger]),
        ]
        func item(_ name: String) -> AccessItem { AccessItem(keychain: "/k", reference: Array(name.utf8), label: "") }
        var round = AccessScreeningRound<String>(AnsweringScreen())
        let kept = round.admitted(["hidden", "asked", "open", "asked"], limit: 2, list: { lists[$0]! }, item: item, pending: { name, _ in name })
        #expect(kept == ["asked", "open"])
        var unasked = AccessScreeningRound<String>(AnsweringScreen())
        #expect(unasked.admitted(["asked", "open"], asking: false, list: { lists[$0]! }, item: item, pending: { name, _ in name }) == ["asked", "open"])
        let screen = AnsweringScreen()
        var counted = AccessScreeningRound<String>(screen)
        _ = counted.admitted(["asked", "open", "asked"], list: { lists[$0]! }, item: item, pending: { name, _ in name + "!" })
        try counted.askOnce { notes throws(KeychainError) in notes.map { AccessItem(keychain: "/k", reference: [], label: $0) } }
        #expect(screen.asked.map { $0.items.map(\.label) } == [["asked!", "asked!"]])
        let silent = AnsweringScreen()
        try AccessScreeningRound<String>(silent).askOnce { _ throws(KeychainError) in [] }
        #expect(silent.asked.isEmpty)
    }
}
