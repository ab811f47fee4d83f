/// Finds the script an interpreter runs in its command line, by the interpreter's own option
/// grammar, so that `python3 -u tool.py` is told apart from `python3 other.py`
/// (docs/access-control.md "Interpreters").
///
/// The command line is what the process shows in `/proc/<pid>/cmdline`, which the process can
/// rewrite: the script is a claim as weak as the rest of an `exe:` identity.
public enum InterpreterCommandLine {
    public enum Interpreter: String, Sendable, CaseIterable {
        case python, node, perl, ruby, shell
    }

    public enum Finding: Sendable, Equatable {
        /// The script path as given (relative to the process's working directory or absolute).
        case script(String)
        /// The interpreter runs no script file; the reason, in words.
        case none(String)
    }

    /// Most arguments looked at; a longer command line is not searched further.
    public static let maximumArguments = 4096

    /// The interpreter an executable is, by its file name (`python3.11`, `nodejs`, `dash`), or
    /// nil for every other program.
    public static func interpreter(forExecutable path: String) -> Interpreter? {
        let name = Substring(path.split(separator: "/").last ?? Substring(path))
        if matches(name, prefix: "python") { return .python }
        if name == "node" || name == "nodejs" { return .node }
        if matches(name, prefix: "perl") { return .perl }
        if matches(name, prefix: "ruby") { return .ruby }
        if ["bash", "sh", "dash", "zsh", "ksh", "ksh93", "mksh"].contains(name) { return .shell }
        return nil
    }

    /// `prefix` followed by nothing or by a version: digits and dots (`python3.11`, `perl5.36.0`).
    private static func matches(_ name: Substring, prefix: String) -> Bool {
        guard name.hasPrefix(prefix) else { return false }
        let version = name.dropFirst(prefix.count)
        return version.isEmpty || (version.first!.isASCII && version.first!.isNumber
            && version.allSatisfy { ($0.isASCII && $0.isNumber) || $0 == "." })
    }

    /// `arguments` are argv without argv[0].
    public static func find(in arguments: [String], for interpreter: Interpreter) -> Finding {
        guard arguments.count <= maximumArguments else {
            return .none("the command line has more than \(maximumArguments) arguments; the script was not looked for")
        }
        switch interpreter {
        case .python: return python(arguments[...])
        case .node: return node(arguments[...])
        case .perl: return perl(arguments[...])
        case .ruby: return ruby(arguments[...])
        case .shell: return shell(arguments[...])
        }
    }

    private static let standardInput = Finding.none("the program comes from standard input")

    /// After `--` (or a lone `-`), the next argument.
    private static func scriptAfterEnd(_ rest: ArraySlice<String>) -> Finding {
        guard let script = rest.first else { return standardInput }
        return script == "-" ? standardInput : .script(script)
    }

    // python3 [-bBdEhiIOPqRsSuvVx?] [-c cmd | -m mod | script | -] [args]; -W and -X take a value.
    private static func python(_ arguments: ArraySlice<String>) -> Finding {
        var rest = arguments
        while let argument = rest.popFirst() {
            if argument == "--" { return scriptAfterEnd(rest) }
            if argument == "-" { return standardInput }
            if argument.hasPrefix("--") {
                if argument == "--check-hash-based-pycs" { _ = rest.popFirst() }
                continue
            }
            guard argument.hasPrefix("-") else { return .script(argument) }
            var letters = argument.dropFirst()
            while let letter = letters.popFirst() {
                switch letter {
                case "c": return .none("python runs a command given with -c, not a script file")
                case "m":
                    let module = letters.isEmpty ? rest.first ?? "" : String(letters)
                    return .none("python runs the module \(module.debugDescription) (-m), not a script file")
                case "W", "X":
                    if letters.isEmpty { _ = rest.popFirst() }
                    letters = ""
                default: continue
                }
            }
        }
        return .none("python runs interactively, with no script")
    }

    /// node's options that take the next argument as their value (unless written `--opt=value`).
    private static let nodeValueOptions: Set<String> = [
        "-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions", "--title",
        "--env-file", "--input-type", "--inspect-port", "--stack-trace-limit", "--redirect-warnings",
        "--diagnostic-dir", "--report-dir", "--openssl-config", "--icu-data-dir", "--watch-path",
    ]

    private static func node(_ arguments: ArraySlice<String>) -> Finding {
        var rest = arguments
        while let argument = rest.popFirst() {
            if argument == "--" { return scriptAfterEnd(rest) }
            if argument == "-" { return standardInput }
            if ["-e", "--eval", "-p", "--print"].contains(argument) || argument.hasPrefix("--eval=") || argument.hasPrefix("--print=") {
                return .none("node runs code given with \(argument.split(separator: "=").first!), not a script file")
            }
            if nodeValueOptions.contains(argument) {
                _ = rest.popFirst()
                continue
            }
            if argument.hasPrefix("--") { continue }
            if argument.hasPrefix("-") {
                // Short flags may be grouped (`-pe`); e or p make it inline code.
                if argument.dropFirst().contains(where: { $0 == "e" || $0 == "p" }) {
                    return .none("node runs code given with \(argument), not a script file")
                }
                continue
            }
            return .script(argument)
        }
        return .none("node runs interactively, with no script")
    }

    // perl: switches group (`-lane`); some take the rest of the group, I/M/m the next argument
    // when the group ends with them.
    private static func perl(_ arguments: ArraySlice<String>) -> Finding {
        var rest = arguments
        var searchesPath = false
        while let argument = rest.popFirst() {
            if argument == "--" { break }
            if argument == "-" { return standardInput }
            guard argument.hasPrefix("-") else {
                return searchesPath ? .none("perl looks the script up in PATH (-S); it was not identified") : .script(argument)
            }
            var letters = argument.dropFirst()
            scan: while let letter = letters.popFirst() {
                switch letter {
                case "e", "E": return .none("perl runs a program given with -\(letter), not a script file")
                case "S": searchesPath = true
                case "I", "M", "m":
                    if letters.isEmpty { _ = rest.popFirst() }
                    break scan
                case "0", "l":
                    // An optional number: octal digits (and `0x` hex for -0).
                    letters = letters.drop { $0.isHexDigit || $0 == "x" }
                case "C":
                    letters = letters.drop { $0.isNumber || "IOEioSALa".contains($0) }
                case "x", "i", "d", "D", "V": break scan
                default: continue
                }
            }
        }
        guard let script = rest.first, script != "-" else { return standardInput }
        return searchesPath ? .none("perl looks the script up in PATH (-S); it was not identified") : .script(script)
    }

    // ruby: -e is inline code; -I -r -C -E take a value (attached or next).
    private static func ruby(_ arguments: ArraySlice<String>) -> Finding {
        var rest = arguments
        while let argument = rest.popFirst() {
            if argument == "--" { return scriptAfterEnd(rest) }
            if argument == "-" { return standardInput }
            if argument.hasPrefix("--") {
                if ["--encoding", "--external-encoding", "--internal-encoding", "--enable", "--disable", "--dump"].contains(argument) {
                    _ = rest.popFirst()
                }
                continue
            }
            guard argument.hasPrefix("-") else { return .script(argument) }
            var letters = argument.dropFirst()
            scan: while let letter = letters.popFirst() {
                switch letter {
                case "e": return .none("ruby runs a program given with -e, not a script file")
                case "I", "r", "C", "E":
                    if letters.isEmpty { _ = rest.popFirst() }
                    break scan
                case "x", "0", "F", "i", "W", "K", "T": break scan
                default: continue
                }
            }
        }
        return standardInput
    }

    /// Shell long options that take the next argument.
    private static let shellValueOptions: Set<String> = ["--rcfile", "--init-file", "--emulate"]

    // sh/bash/dash/zsh/ksh: `-c` runs a command string, `-s` reads standard input; -o/+o and
    // -O/+O take the next argument; the first other operand is the script.
    private static func shell(_ arguments: ArraySlice<String>) -> Finding {
        var rest = arguments
        while let argument = rest.popFirst() {
            if argument == "--" || argument == "-" { return scriptAfterEnd(rest) }
            if argument.hasPrefix("--") {
                if shellValueOptions.contains(argument) { _ = rest.popFirst() }
                continue
            }
            guard argument.hasPrefix("-") || argument.hasPrefix("+") else { return .script(argument) }
            var pendingValues = 0
            for letter in argument.dropFirst() {
                switch letter {
                case "c": return .none("the shell runs a command given with -c, not a script file")
                case "s": return .none("the shell reads its commands from standard input (-s)")
                case "o", "O": pendingValues += 1
                default: continue
                }
            }
            rest = rest.dropFirst(pendingValues)
        }
        return .none("the shell runs interactively, with no script")
    }
}
