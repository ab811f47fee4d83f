import Foundation
import KeywellAccess
import KeywellIdentity
import KeywellProtocol
import KeywellSystem
import Testing

/// One answer per program and list (docs/access-control.md): an answer about an item covers the
/// program for the other items of its keychain whose list is the same, and the words say so.
@Suite("Same-list scope of an answer")
struct SameListScopeTests {
    static let chromium = "exe:/usr/lib/chromium/chromium"
    static let mailer = "exe:/usr/bin/mailer;sha256=" + String(repeating: "d", count: 64)
    static let keychain = "/home/u/.local/share/keywell/keychains/login.keychain-db"
    let seahorse = AccessCaller(connection: ":1.30", identity: ApplicationIdentity(.executable(path: "/usr/bin/seahorse", sha256: nil, script: nil)))

    static func item(_ number: UInt8, _ trusted: [String], keychain: String = keychain) -> AccessItem {
        AccessItem(keychain: keychain, reference: [number], label: "password \(number)", trusted: trusted)
    }

    /// A keychain of three Chromium items, one mail item, and one that trusts no program; the
    /// lookup answers as the store does: same keychain, the same list, a list naming a program.
    static let keychainItems = [item(1, [chromium]), item(2, [chromium]), item(3, [chromium]), item(4, [mailer]), item(5, [])]
    static let sameList: AccessGate.SameListItems = { asked in
        keychainItems.filter { candidate in
            !candidate.trusted.isEmpty && !asked.contains(candidate)
                && asked.contains { $0.keychain == candidate.keychain && $0.trusted == candidate.trusted }
        }
    }

    @Test func oneAllowCoversTheOtherItemsWithTheSameListAndNoOthers() {
        let asker = ScriptedAsker([.allowOnce])
        let gate = AccessGate(asker: asker, persist: { _, _ in Issue.record("Allow writes nothing") }, sameList: Self.sameList)
        let chromiumList = AccessList.applications([Self.chromium])
        #expect(gate.ask(seahorse, about: [Self.item(1, [Self.chromium])], interactive: true) == .allowOnce)
        // The program's next runs (other connections) read all three without a question.
        let nextRun = AccessCaller(connection: ":1.31", identity: seahorse.identity)
        for number: UInt8 in 1...3 {
            #expect(gate.verdict(for: nextRun, item: Self.item(number, [Self.chromium]), list: chromiumList) == .allowed)
        }
        // An item with another list is asked about on its own.
        #expect(gate.verdict(for: nextRun, item: Self.item(4, [Self.mailer]), list: .applications([Self.mailer])) == .mustAsk)
        #expect(gate.verdict(for: nextRun, item: Self.item(5, []), list: .applications([])) == .mustAsk)
        #expect(asker.count == 1)
        #expect(asker.last?.companions.map(\.label) == ["password 2", "password 3"])
        // Until the keychain locks, as for the items asked about.
        gate.keychainLocked(path: Self.keychain)
        #expect(gate.verdict(for: nextRun, item: Self.item(2, [Self.chromium]), list: chromiumList) == .mustAsk)
    }

    @Test func denyLeavesEveryItemOfTheListUnread() {
        let asker = ScriptedAsker([.deny, .allowOnce])
        let gate = AccessGate(asker: asker, persist: { _, _ in }, sameList: Self.sameList, burstWindow: .zero)
        let chromiumList = AccessList.applications([Self.chromium])
        #expect(gate.ask(seahorse, about: [Self.item(1, [Self.chromium])], interactive: true) == .deny)
        for number: UInt8 in 1...3 {
            #expect(gate.verdict(for: seahorse, item: Self.item(number, [Self.chromium]), list: chromiumList) == .mustAsk)
        }
        // The next read asks again.
        #expect(gate.ask(seahorse, about: [Self.item(2, [Self.chromium])], interactive: true) == .allowOnce)
        #expect(asker.count == 2)
    }

    @Test func alwaysAllowWritesTheProgramIntoEveryItemOfTheList() {
        let written = Written()
        let gate = AccessGate(asker: ScriptedAsker([.alwaysAllow]), persist: { written.add($0, $1) }, sameList: Self.sameList)
        #expect(gate.ask(seahorse, about: [Self.item(2, [Self.chromium])], interactive: true) == .alwaysAllow)
        #expect(written.all.count == 1)
        #expect(written.all.first?.1.map(\.label) == ["password 2", "password 1", "password 3"])
    }

    @Test func theWordsCountTheOtherItemsAndNameWhoSavedThem() {
        let asked = [Self.item(1, [Self.chromium])]
        let two = AccessQuestion(caller: seahorse, items: asked, companions: [Self.item(2, [Self.chromium]), Self.item(3, [Self.chromium])])
        #expect(two.description.hasPrefix(
            "“seahorse” wants to use “password 1” from your keychain “\(Self.keychain)”, and the 2 other items “chromium” saved there."))
        #expect(two.description.contains("Allow lets it use them until the keychain locks"))
        let one = AccessQuestion(caller: seahorse, items: asked, companions: [Self.item(2, [Self.chromium])])
        #expect(one.description.contains(", and the other item “chromium” saved there."))
        // Lists of several programs: no one maker to name.
        let shared = [Self.chromium, Self.mailer]
        let several = AccessQuestion(caller: seahorse, items: [Self.item(1, shared)], companions: [Self.item(2, shared)])
        #expect(several.description.contains(", and the other item there that trust the same programs."))
        // None: the words of a single item, unchanged.
        let alone = AccessQuestion(caller: seahorse, items: asked)
        #expect(alone.description.hasPrefix("“seahorse” wants to use “password 1” from your keychain “\(Self.keychain)”.\n"))
        #expect(alone.description.contains("Allow lets it use it until"))
        // The maker's name is a name, never its identity or hash.
        let hashed = AccessQuestion(caller: seahorse, items: asked, companions: [Self.item(2, [Self.mailer])])
        #expect(hashed.description.contains("“mailer” saved there") && !hashed.description.contains("sha256"))
    }

    @Test func theMakerGoesByItsDesktopEntrysName() throws {
        let desktop = try DesktopFixture()
        try desktop.entry("mail.desktop", "[Desktop Entry]\nType=Application\nName=Mail Client\nExec=\(desktop.program) %u\n")
        let naming = DesktopProgramNaming(DesktopEntryNames(environment: ["XDG_DATA_HOME": desktop.dataHome, "XDG_DATA_DIRS": "/nonexistent"]))
        let maker = AccessList.executableIdentity(path: desktop.program, sha256Hex: String(repeating: "e", count: 64))
        let question = AccessQuestion(caller: seahorse, items: [Self.item(1, [maker])], companions: [Self.item(2, [maker])], naming: naming)
        #expect(question.description.contains(", and the other item “Mail Client” saved there."))
    }
}
