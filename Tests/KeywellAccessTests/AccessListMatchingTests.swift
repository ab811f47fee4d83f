import KeywellAccess
import KeywellIdentity
import KeywellProtocol
import Testing

/// Which list entries name a caller (docs/access-control.md, "Programs only root can replace"):
/// a program named with its hash only by its exact name, a program only root can replace by its
/// name and by the hashed entries written for its path before.
@Suite struct AccessListMatchingTests {
    private let oldHash = String(repeating: "a", count: 64)
    private let newHash = String(repeating: "b", count: 64)
    private let scriptHash = String(repeating: "c", count: 64)

    private func caller(_ path: String, sha256: String?, script: ApplicationIdentity.Script? = nil) -> AccessCaller {
        AccessCaller(connection: ":1.7", identity: ApplicationIdentity(.executable(path: path, sha256: sha256, script: script)))
    }

    private func trusts(_ entries: [String], _ caller: AccessCaller) -> Bool {
        AccessList.applications(entries).trusts(caller)
    }

    @Test func aProgramOnlyRootCanReplaceIsNamedByItsPath() {
        let tool = caller("/usr/bin/tool", sha256: nil)
        #expect(tool.identityString == "exe:/usr/bin/tool")
        #expect(trusts(["exe:/usr/bin/tool"], tool))
        // Entries written while it was named with its hash, whatever that hash was.
        #expect(trusts(["exe:/usr/bin/tool;sha256=\(oldHash)"], tool))
        #expect(trusts(["exe:/usr/bin/tool;sha256=00"], tool))
        // Never another path, nor a path that only begins like its own.
        #expect(!trusts(["exe:/usr/bin/other", "exe:/usr/bin/other;sha256=\(oldHash)"], tool))
        #expect(!trusts(["exe:/usr/bin/tool2", "exe:/usr/bin/tool2;sha256=\(oldHash)", "exe:/usr/bin/tool/x"], tool))
        // Not a hash field without a hash, nor one followed by anything but a script part.
        #expect(!trusts(["exe:/usr/bin/tool;sha256=", "exe:/usr/bin/tool;sha256=xyz", "exe:/usr/bin/tool;sha256=\(oldHash)x"], tool))
        #expect(!trusts(["exe:/usr/bin/tool;sha256=\(oldHash);script=/h/t.py;script-sha256=\(scriptHash)"], tool))
    }

    @Test func aProgramNamedWithItsHashIsMatchedExactly() {
        let tool = caller("/home/me/bin/tool", sha256: newHash)
        #expect(tool.identityString == "exe:/home/me/bin/tool;sha256=\(newHash)")
        #expect(trusts(["exe:/home/me/bin/tool;sha256=\(newHash)"], tool))
        // Another build of it, and the path alone, are other programs.
        #expect(!trusts(["exe:/home/me/bin/tool;sha256=\(oldHash)"], tool))
        #expect(!trusts(["exe:/home/me/bin/tool"], tool))
    }

    /// "café" spelt composed and decomposed are equal Strings but two files: a list naming one
    /// program never trusts the other, nor is one's Allow the other's.
    @Test func aPathSpeltInOtherBytesIsAnotherProgram() {
        let composed = caller("/opt/caf\u{E9}/tool", sha256: nil)
        let decomposed = caller("/opt/cafe\u{301}/tool", sha256: nil)
        #expect(composed.identityString == decomposed.identityString)  // what a String comparison says
        #expect(!trusts([composed.identityString!], decomposed))
        #expect(!trusts([composed.identityString! + ";sha256=\(oldHash)"], decomposed))
        #expect(trusts([decomposed.identityString!], decomposed))
        #expect(composed != decomposed)
        let hashed = caller("/home/me/caf\u{E9}", sha256: newHash)
        #expect(!trusts([hashed.identityString!], caller("/home/me/cafe\u{301}", sha256: newHash)))
    }

    @Test func aRootOnlyInterpreterKeepsItsScriptsHash() {
        let script = ApplicationIdentity.Script.file(path: "/h/t.py", sha256: scriptHash)
        let python = caller("/usr/bin/python3.11", sha256: nil, script: script)
        let scriptPart = ";script=/h/t.py;script-sha256=\(scriptHash)"
        #expect(python.identityString == "exe:/usr/bin/python3.11\(scriptPart)")
        #expect(trusts(["exe:/usr/bin/python3.11\(scriptPart)"], python))
        #expect(trusts(["exe:/usr/bin/python3.11;sha256=\(oldHash)\(scriptPart)"], python))
        // The interpreter named alone trusts it whatever script it runs, in either form.
        #expect(trusts(["exe:/usr/bin/python3.11"], python))
        #expect(trusts(["exe:/usr/bin/python3.11;sha256=\(oldHash)"], python))
        // Another script, or the same script changed, is not it.
        #expect(!trusts(["exe:/usr/bin/python3.11;script=/h/t.py;script-sha256=\(oldHash)"], python))
        #expect(!trusts(["exe:/usr/bin/python3.11;sha256=\(oldHash);script=/h/u.py;script-sha256=\(scriptHash)"], python))
    }

    @Test func anInterpreterNamedWithItsHashIsMatchedExactly() {
        let script = ApplicationIdentity.Script.file(path: "/h/t.py", sha256: scriptHash)
        let python = caller("/home/me/python3", sha256: newHash, script: script)
        #expect(trusts(["exe:/home/me/python3;sha256=\(newHash)"], python))
        #expect(!trusts(["exe:/home/me/python3", "exe:/home/me/python3;script=/h/t.py;script-sha256=\(scriptHash)"], python))
        #expect(!trusts(["exe:/home/me/python3;sha256=\(oldHash);script=/h/t.py;script-sha256=\(scriptHash)"], python))
    }

    @Test func aRootOnlyInterpreterWithoutAScriptFileIsItsPath() {
        let python = caller("/usr/bin/python3.11", sha256: nil, script: .none(reason: "-m module"))
        #expect(python.identityString == "exe:/usr/bin/python3.11")
        #expect(trusts(["exe:/usr/bin/python3.11;sha256=\(oldHash)"], python))
        #expect(!trusts(["exe:/usr/bin/python3.11;script=/h/t.py;script-sha256=\(scriptHash)"], python))
    }

    @Test func theReasonSaysOnlyRootCanReplaceItAndStillNamesTheWeakness() {
        let rootOnly = ApplicationIdentity(.executable(path: "/usr/bin/tool", sha256: nil, script: nil))
        #expect(rootOnly.strength == .weak)
        #expect(rootOnly.strengthReason.contains("only root can replace"))
        #expect(rootOnly.strengthReason.contains("LD_PRELOAD"))
        let hashed = ApplicationIdentity(.executable(path: "/home/me/tool", sha256: newHash, script: nil))
        #expect(!hashed.strengthReason.contains("only root"))
    }
}
