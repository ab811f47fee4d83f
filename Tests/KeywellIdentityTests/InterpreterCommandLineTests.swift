import KeywellIdentity
import Testing

/// Finding an interpreter's script in its command line, by each interpreter's option grammar
/// (docs/access-control.md "Interpreters").
@Suite("Interpreter command lines")
struct InterpreterCommandLineTests {
    typealias Finding = InterpreterCommandLine.Finding

    @Test(arguments: [
        ("/usr/bin/python3.11", InterpreterCommandLine.Interpreter.python),
        ("/usr/bin/python3", .python), ("/usr/bin/python", .python), ("/opt/py/bin/python2.7", .python),
        ("/usr/bin/node", .node), ("/usr/bin/nodejs", .node),
        ("/usr/bin/perl", .perl), ("/usr/bin/perl5.36.0", .perl),
        ("/usr/bin/ruby3.1", .ruby), ("/usr/bin/bash", .shell), ("/usr/bin/dash", .shell), ("/bin/zsh", .shell),
        ("/usr/bin/mksh", .shell),
    ])
    func interpretersAreKnownByFileName(path: String, expected: InterpreterCommandLine.Interpreter) {
        #expect(InterpreterCommandLine.interpreter(forExecutable: path) == expected)
    }

    @Test(arguments: ["/usr/bin/python-config", "/usr/bin/pythonista", "/usr/bin/perldoc", "/usr/bin/rubyx",
                      "/usr/bin/gdbus", "/usr/bin/bashbug", "/usr/bin/python3.x", "/usr/bin/nodemon", ""])
    func otherProgramsAreNotInterpreters(path: String) {
        #expect(InterpreterCommandLine.interpreter(forExecutable: path) == nil)
    }

    private func python(_ arguments: String...) -> Finding { InterpreterCommandLine.find(in: arguments, for: .python) }
    private func node(_ arguments: String...) -> Finding { InterpreterCommandLine.find(in: arguments, for: .node) }
    private func perl(_ arguments: String...) -> Finding { InterpreterCommandLine.find(in: arguments, for: .perl) }
    private func ruby(_ arguments: String...) -> Finding { InterpreterCommandLine.find(in: arguments, for: .ruby) }
    private func shell(_ arguments: String...) -> Finding { InterpreterCommandLine.find(in: arguments, for: .shell) }

    private func isNone(_ finding: Finding, mentioning word: String) -> Bool {
        if case .none(let reason) = finding { return reason.contains(word) }
        return false
    }

    @Test func pythonOptionsAreSkippedAndTheirValuesToo() {
        #expect(python("script.py") == .script("script.py"))
        #expect(python("-u", "script.py", "-c", "x") == .script("script.py"))
        #expect(python("-uB", "-W", "ignore", "-X", "dev", "/opt/tool.py") == .script("/opt/tool.py"))
        #expect(python("-Wignore", "-Xdev", "tool.py") == .script("tool.py"))
        #expect(python("--check-hash-based-pycs", "always", "tool.py") == .script("tool.py"))
        #expect(python("-I", "--", "-weird-name.py") == .script("-weird-name.py"))
    }

    @Test func pythonWithoutAScriptFileSaysWhy() {
        #expect(isNone(python("-m", "http.server"), mentioning: "\"http.server\" (-m)"))
        #expect(isNone(python("-mhttp.server"), mentioning: "\"http.server\""))
        #expect(isNone(python("-u", "-c", "print(1)", "decoy.py"), mentioning: "-c"))
        #expect(isNone(python("-uc", "print(1)"), mentioning: "-c"))
        #expect(isNone(python("-"), mentioning: "standard input"))
        #expect(isNone(python(), mentioning: "interactively"))
        // The value of -W is not the script.
        #expect(isNone(python("-W", "decoy.py"), mentioning: "interactively"))
    }

    @Test func nodeGrammar() {
        #expect(node("app.js", "--eval", "x") == .script("app.js"))
        #expect(node("--require", "decoy.js", "--max-old-space-size=100", "app.js") == .script("app.js"))
        #expect(node("-r", "decoy.js", "--import=x.mjs", "app.mjs") == .script("app.mjs"))
        #expect(isNone(node("-e", "1"), mentioning: "-e"))
        #expect(isNone(node("-pe", "1"), mentioning: "-pe"))
        #expect(isNone(node("--eval=1"), mentioning: "--eval"))
        #expect(node("--", "app.js") == .script("app.js"))
        #expect(isNone(node(), mentioning: "interactively"))
    }

    @Test func perlGrammar() {
        #expect(perl("-w", "tool.pl") == .script("tool.pl"))
        #expect(perl("-I", "lib", "tool.pl") == .script("tool.pl"))
        #expect(perl("-Ilib", "-MData::Dumper", "tool.pl") == .script("tool.pl"))
        #expect(perl("-l012", "-0777", "tool.pl") == .script("tool.pl"))
        #expect(isNone(perl("-lane", "print"), mentioning: "-e"))
        #expect(isNone(perl("-E", "say 1"), mentioning: "-E"))
        #expect(isNone(perl("-S", "tool.pl"), mentioning: "PATH"))
        #expect(perl("--", "tool.pl") == .script("tool.pl"))
    }

    @Test func rubyGrammar() {
        #expect(ruby("-w", "tool.rb") == .script("tool.rb"))
        #expect(ruby("-I", "lib", "-r", "json", "tool.rb") == .script("tool.rb"))
        #expect(ruby("-rjson", "--disable", "gems", "tool.rb") == .script("tool.rb"))
        #expect(isNone(ruby("-e", "puts 1"), mentioning: "-e"))
        #expect(isNone(ruby("-ne", "print"), mentioning: "-e"))
    }

    @Test func shellGrammar() {
        #expect(shell("./run.sh", "-c", "x") == .script("./run.sh"))
        #expect(shell("-eu", "-o", "pipefail", "run.sh") == .script("run.sh"))
        #expect(shell("-euo", "pipefail", "run.sh") == .script("run.sh"))
        #expect(shell("+o", "posix", "--norc", "run.sh") == .script("run.sh"))
        #expect(shell("--rcfile", "decoy", "run.sh") == .script("run.sh"))
        #expect(shell("--", "run.sh") == .script("run.sh"))
        #expect(isNone(shell("-c", "echo hi", "decoy.sh"), mentioning: "-c"))
        #expect(isNone(shell("-ec", "echo hi"), mentioning: "-c"))
        #expect(isNone(shell("-s", "arg"), mentioning: "standard input"))
        #expect(isNone(shell("-i"), mentioning: "interactively"))
    }

    @Test func hostileCommandLinesStayBounded() {
        let many = [String](repeating: "-u", count: InterpreterCommandLine.maximumArguments) + ["tool.py"]
        #expect(isNone(InterpreterCommandLine.find(in: many, for: .python), mentioning: "more than"))
        let justUnder = [String](repeating: "-u", count: InterpreterCommandLine.maximumArguments - 1) + ["tool.py"]
        #expect(InterpreterCommandLine.find(in: justUnder, for: .python) == .script("tool.py"))
        // Options that want a value at the very end find none, and nothing breaks.
        #expect(isNone(shell("-o"), mentioning: "interactively"))
        #expect(isNone(ruby("-I"), mentioning: "standard input"))
        #expect(isNone(perl("-I"), mentioning: "standard input"))
        #expect(isNone(node("-r"), mentioning: "interactively"))
    }
}
