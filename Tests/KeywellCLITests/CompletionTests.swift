import Foundation
import Testing

/// `keywell completion <shell>` and the generated files committed under completions/.
@Suite struct CompletionTests {
    let session: CLISession
    init() throws { session = try SharedSessions.login() }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let files = ["bash": "completions/keywell.bash", "zsh": "completions/_keywell", "fish": "completions/keywell.fish"]

    @Test(arguments: ["bash", "zsh", "fish"])
    func scriptsMatchTheCommittedFiles(shell: String) throws {
        let result = try session.run(["completion", shell])
        #expect(result.exit == 0)
        #expect(result.stdout.contains("find-generic-password"))
        let committed = try String(contentsOf: Self.repository.appendingPathComponent(Self.files[shell]!), encoding: .utf8)
        #expect(result.stdout == committed, "regenerate with: keywell completion \(shell) > \(Self.files[shell]!)")
    }

    @Test func bashScriptIsValidAndCompletes() throws {
        let script = try session.run(["completion", "bash"]).stdout
        let path = session.bus.directory.subpath("keywell.bash")
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        let check = try session.run(["-c", "bash -n \(path)"], as: "/bin/sh")
        #expect(check.exit == 0, "\(check)")
        // Drive the function as bash's completion would: commands, options, keychain names.
        let probe = """
            source \(path)
            COMP_WORDS=(keywell find-gen); COMP_CWORD=1; _keywell; echo "${COMPREPLY[@]}"
            COMP_WORDS=(keywell find-internet-password -r ht); COMP_CWORD=3; _keywell; echo "${COMPREPLY[@]}"
            COMP_WORDS=(keywell unlock-keychain lo); COMP_CWORD=2; _keywell; echo "${COMPREPLY[@]}"
            """
        let result = try session.run(["-c", probe], as: "/bin/bash")
        #expect(result.stdout == "find-generic-password\nhttp htps htpx htsx\nlogin\n", "\(result)")
    }

    @Test func unknownShellIsAnError() throws {
        let result = try session.run(["completion", "tcsh"])
        #expect(result.exit != 0)
        #expect(result.stdout.isEmpty)
    }
}
