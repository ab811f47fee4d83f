import KeywellProtocol
import Testing

@testable import KeywellCLI

/// Which entries of a list name the program `keywell access` was given, in-process
/// (docs/access-control.md, "Grants a person can manage").
@Suite struct ProgramGrantTests {
    private let hash = String(repeating: "ab", count: 32)

    @Test func aRootOnlyProgramIsAlsoNamedByItsHashedEntries() {
        let grant = ProgramGrant(identity: "exe:/usr/bin/git")
        #expect(grant.isNamed(by: "exe:/usr/bin/git"))
        #expect(grant.isNamed(by: "exe:/usr/bin/git;sha256=\(hash)"))
        // Not another program whose path starts alike, nor an interpreter's script entry.
        #expect(!grant.isNamed(by: "exe:/usr/bin/git-lfs;sha256=\(hash)"))
        #expect(!grant.isNamed(by: "exe:/usr/bin/git;sha256=\(hash);script=/home/u/s.py"))
    }

    @Test func aHashedIdentityNamesItselfOnly() {
        let grant = ProgramGrant(identity: "exe:/home/u/bin/tool;sha256=\(hash)")
        #expect(grant.isNamed(by: "exe:/home/u/bin/tool;sha256=\(hash)"))
        #expect(!grant.isNamed(by: "exe:/home/u/bin/tool"))
        #expect(!grant.isNamed(by: "exe:/home/u/bin/tool;sha256=\(String(repeating: "cd", count: 32))"))
    }

    @Test func listsOpenToAnyApplicationNameNoProgram() {
        let grant = ProgramGrant(identity: "flatpak:org.example.App")
        #expect(!grant.isNamed(in: .anyApplication))
        #expect(!grant.isNamed(in: nil))
        #expect(!grant.isNamed(in: .applications([])))
        #expect(grant.isNamed(in: .applications(["exe:/usr/bin/env", "flatpak:org.example.App"])))
    }

    @Test func anIdentityIsCheckedAsAListEntryIs() {
        #expect(throws: KeychainError.self) { try ProgramGrant.from(identity: "") }
        #expect(throws: KeychainError.self) { try ProgramGrant.from(identity: "exe:/x\n") }
        #expect(throws: KeychainError.self) { try ProgramGrant.from(path: "") }
    }
}
