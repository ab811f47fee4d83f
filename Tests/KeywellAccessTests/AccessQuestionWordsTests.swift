import Foundation
import KeywellAccess
import KeywellIdentity
import KeywellProtocol
import KeywellSystem
import Testing

/// The words of the question (docs/access-control.md, "The words"): names people know, no
/// identity strings or hashes, and the sentence that says a program changed.
@Suite("Access question words")
struct AccessQuestionWordsTests {
    static let hashA = String(repeating: "a", count: 64)
    static let hashB = String(repeating: "b", count: 64)

    static func caller(_ path: String, hash: String? = hashA, script: ApplicationIdentity.Script? = nil) -> AccessCaller {
        AccessCaller(connection: ":1.5", identity: ApplicationIdentity(.executable(path: path, sha256: hash, script: script)))
    }

    static func item(_ label: String, trusted: [String] = [], keychain: String = "/home/u/.local/share/keywell/keychains/login.keychain-db") -> AccessItem {
        AccessItem(keychain: keychain, reference: Array(label.utf8), label: label, trusted: trusted)
    }

    /// Whether `text` holds something a person should never see in the dialog.
    static func holdsIdentityText(_ text: String) -> Bool {
        if text.contains("exe:") || text.contains("sha256=") || text.contains("script=") { return true }
        var run = 0
        for scalar in text.unicodeScalars {
            run = scalar.properties.isASCIIHexDigit ? run + 1 : 0
            if run >= 16 { return true }
        }
        return false
    }

    @Test func noIdentityHashOrScriptInAnyQuestion() {
        let script = ApplicationIdentity.Script.file(path: "/home/u/bin/sync.py", sha256: Self.hashB)
        let callers = [
            Self.caller("/usr/bin/tool"), Self.caller("/usr/bin/tool", hash: nil),
            Self.caller("/usr/bin/python3.11", hash: nil, script: script),
            Self.caller("/home/u/bin/0123456789abcdef0123456789"),
            AccessCaller(connection: ":1.6", identity: nil),
        ]
        let labels = ["mail", "exe:/usr/bin/ssh;sha256=\(Self.hashA)", "script=x", "token \(Self.hashB)", "SHA256=AB"]
        for caller in callers {
            for label in labels {
                let question = AccessQuestion(caller: caller, items: [Self.item(label, trusted: ["exe:\(caller.identityString ?? "")"])])
                for text in [AccessQuestion.title, question.description, AccessQuestion.allowButton,
                             AccessQuestion.alwaysAllowButton, AccessQuestion.denyButton] {
                    #expect(!Self.holdsIdentityText(text), "\(text)")
                }
            }
        }
    }

    @Test func namesTheKeychainAsListKeychainsPrintsIt() {
        let path = "/home/u/.local/share/keywell/keychains/login.keychain-db"
        let text = AccessQuestion(caller: Self.caller("/usr/bin/tool"), items: [Self.item("mail", keychain: path)]).description
        #expect(text.hasPrefix("“tool” wants to use “mail” from your keychain “\(path)”."))
        let two = AccessQuestion(caller: Self.caller("/usr/bin/tool"),
                                 items: [Self.item("a", keychain: "/k/one"), Self.item("b", keychain: "/k/two")]).description
        #expect(two.contains("and 1 more item from your keychain “/k/one” and 1 more keychain."))
    }

    @Test func saysTheProgramChangedWhenAnItemTrustsItsOlderHash() {
        let caller = Self.caller("/home/u/bin/tool")
        let older = "exe:/home/u/bin/tool;sha256=\(Self.hashB)"
        let changed = AccessQuestion(caller: caller, items: [Self.item("mail", trusted: ["exe:/usr/bin/other", older])])
        #expect(changed.programChanged)
        #expect(changed.description.contains("“tool” has changed since this item trusted it"))

        let stranger = AccessQuestion(caller: caller, items: [Self.item("mail", trusted: ["exe:/home/u/bin/other;sha256=\(Self.hashA)"])])
        #expect(!stranger.programChanged)
        #expect(!stranger.description.contains("changed"))
        #expect(!stranger.description.contains("updated"))
    }

    @Test func aScriptChangedIsSaidSoAnotherScriptIsNot() {
        let script = ApplicationIdentity.Script.file(path: "/home/u/bin/sync.py", sha256: Self.hashA)
        let caller = Self.caller("/usr/bin/python3.11", hash: nil, script: script)
        let older = "exe:/usr/bin/python3.11;script=/home/u/bin/sync.py;script-sha256=\(Self.hashB)"
        #expect(AccessQuestion(caller: caller, items: [Self.item("a", trusted: [older])]).programChanged)
        let olderInterpreter = "exe:/usr/bin/python3.11;sha256=\(Self.hashB);script=/home/u/bin/sync.py;script-sha256=\(Self.hashB)"
        #expect(AccessQuestion(caller: caller, items: [Self.item("a", trusted: [olderInterpreter])]).programChanged)
        let another = "exe:/usr/bin/python3.11;script=/home/u/bin/other.py;script-sha256=\(Self.hashB)"
        #expect(!AccessQuestion(caller: caller, items: [Self.item("a", trusted: [another])]).programChanged)
    }

    @Test func aDesktopEntryNamesTheProgram() throws {
        let folder = try DesktopFixture()
        try folder.entry("mail.desktop", "[Desktop Entry]\nType=Application\nName=Mail\nName[de]=Post\nExec=\(folder.program) %u\n")
        let names = DesktopEntryNames(environment: ["XDG_DATA_HOME": folder.dataHome, "XDG_DATA_DIRS": "/nonexistent", "LANG": "de_DE.UTF-8"])
        let caller = Self.caller(folder.program)
        #expect(AccessQuestion(caller: caller, items: [Self.item("mail")], naming: DesktopProgramNaming(names)).description
            .hasPrefix("“Post” wants to use “mail”"))
    }

    @Test func aDenialLineNamesProgramIdentityLabelsAndReason() {
        let caller = Self.caller("/usr/bin/tool")
        let items = (1...10).map { Self.item("item \($0)\n") }
        let line = AccessDenialLine(programName: "Tool", caller: caller, items: items, reason: AccessReply.answeredDeny).text
        #expect(line.hasPrefix("access denied: “Tool” (\(caller.identityString!)) may not use 10 items (“item 1\u{FFFD}”"))
        #expect(line.contains("and 2 more"))
        #expect(line.hasSuffix(": answered Deny"))
        #expect(!line.contains("\n"))
    }

    @Test func everyDenialWritesOneLine() {
        let lines = CollectedLines()
        let gate = AccessGate(asker: ScriptedAsker([.deny]), persist: { _, _ in }, log: lines.logger())
        let caller = Self.caller("/usr/bin/tool")
        #expect(gate.ask(caller, about: [Self.item("mail")], interactive: true) == .deny)
        #expect(gate.ask(caller, about: [Self.item("news")], interactive: true) == .deny)
        #expect(gate.ask(caller, about: [Self.item("news")], interactive: true) == .deny)
        let other = AccessCaller(connection: ":1.9", identity: caller.identity)
        #expect(gate.ask(other, about: [Self.item("web")], interactive: false) == .deny)
        let denials = lines.all.filter { $0.hasPrefix("access denied: ") }
        #expect(denials.count == 3)
        #expect(denials[0].contains("(“mail”)") && denials[0].hasSuffix(": answered Deny"))
        #expect(denials[1].contains("(“news”)") && denials[1].contains("the same burst"))
        #expect(denials[2].contains("(“web”)") && denials[2].contains("u_AuthUI"))
    }
}
