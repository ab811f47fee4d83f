import KeywellProtocol

#if canImport(Glibc)
import Glibc
#endif

/// `security`'s main(): global options, then one command (or, with -i, one per input line).
/// Returns the status whose low byte is the exit code.
enum Program {
    static func run(_ arguments: [String]) -> Int32 {
        let progname = baseName(arguments.first ?? "keywell")
        // git runs its helper as git-credential-keywell (a link to keywell): answer to that name
        // directly, with messages and hints naming keywell, whose commands they suggest.
        if progname == GitCredentialCommand.programName {
            let context = CommandContext(progname: "keywell", quiet: false)
            let words = ["git-credential"] + arguments.dropFirst()
            // git's call (one action word) goes straight to the helper, as `execute` would send
            // it: building the table of every command first cost more than the lookup
            // (docs/performance.md).
            if words.count == 2, words[1] != "--help" {
                return GitCredentialCommand.run(context, Invocation(words: words, argvIndex: 1, arguments: .init()), ownsInput: true)
            }
            return execute(words, argvIndex: 1, context: context, verbose: false)
        }
        let global = GetoptParser(optionString: "hilp:qv", longFlags: ["help", "version"])
        let parsed: GetoptParser.Result
        do {
            parsed = try global.parse([progname] + arguments.dropFirst(), trailingLongFlags: false)
        } catch {
            StandardStreams.error.write(error.getoptLine(argv0: progname))
            StandardStreams.output.write(HelpCommand.globalUsage(progname: progname))
            return CommandStatus.usage
        }
        if parsed.longFlags.contains("help") {
            StandardStreams.output.write(HelpCommand.globalUsage(progname: progname, notes: true))
            return CommandStatus.success
        }
        // A Linux addition macOS lacks (its getopt refuses any `--word` there, exit 2), so no
        // script written for a Mac can depend on what it does.
        if parsed.longFlags.contains("version") {
            StandardStreams.output.write("keywell \(KeywellVersion.string)\n")
            return CommandStatus.success
        }
        if parsed.has("h") {
            StandardStreams.output.write(HelpCommand.globalUsage(progname: progname))
            return CommandStatus.usage
        }
        let context = CommandContext(progname: progname, quiet: parsed.has("q"))
        let verbose = parsed.has("v")
        let interactive = parsed.has("i") || parsed.has("p")
        let words = parsed.operands
        if !words.isEmpty {
            let argvIndex = arguments.count - words.count
            return execute(words, argvIndex: argvIndex, context: context, verbose: verbose)
        }
        if interactive {
            return InteractiveMode.run(prompt: parsed.value("p") ?? "\(progname)> ", context: context, verbose: verbose)
        }
        StandardStreams.output.write(HelpCommand.globalUsage(progname: progname))
        return CommandStatus.usage
    }

    /// Runs one command line. `words[0]` may be any prefix of a command name: the first
    /// command in table order that starts with it runs (`list` is list-keychains).
    static func execute(_ words: [String], argvIndex: Int?, context: CommandContext, verbose: Bool) -> Int32 {
        guard let typed = words.first else { return CommandStatus.success }
        guard let spec = CommandTable.match(typed) else {
            context.diagnostics.error("unknown command \"\(typed)\"")
            return CommandStatus.failure
        }
        if verbose {
            // `security -v`: the command's full name, then each argument in double quotes.
            StandardStreams.error.write(spec.name + words.dropFirst().map { " \"\($0)\"" }.joined() + "\n")
        }
        var words = words
        words[0] = spec.name
        guard spec.usesGetopt else {
            if !spec.ownHelp, words.count == 2, words[1] == "--help" {
                StandardStreams.output.write(HelpCommand.fullHelp(spec, progname: context.progname))
                return CommandStatus.success
            }
            return spec.run(context, Invocation(words: words, argvIndex: argvIndex, arguments: .init()))
        }
        var promptsForPassword = false
        if spec.trailingWPrompts, words.count > 1, words.last == "-w" {
            words.removeLast()
            promptsForPassword = true
        }
        var parser = GetoptParser(optionString: spec.optionString, longFlags: spec.longFlags)
        parser.longValueOptions = spec.longValueOptions
        let arguments: GetoptParser.Result
        do {
            arguments = try parser.parse(words, firstWordIndex: argvIndex ?? 0)
        } catch {
            // getopt's own line names the command as typed (its argv[0]), then the usage.
            if spec.getoptComplains(about: error) { StandardStreams.error.write(error.getoptLine(argv0: typed)) }
            StandardStreams.error.write(HelpCommand.usageLines(spec))
            if error == .unknownOption("-h") {
                context.diagnostics.hint("-h prints this usage (exit 2) as in macOS security; `\(context.progname) \(spec.name) --help` prints the full help")
            }
            return CommandStatus.usage
        }
        if arguments.longFlags.contains("help") {
            StandardStreams.output.write(HelpCommand.fullHelp(spec, progname: context.progname))
            return CommandStatus.success
        }
        var invocation = Invocation(words: words, argvIndex: argvIndex, arguments: arguments)
        invocation.promptsForPassword = promptsForPassword
        let status = spec.run(context, invocation)
        if status == CommandStatus.usage {
            StandardStreams.error.write(HelpCommand.usageLines(spec))
        }
        return status
    }

    /// The last non-empty component of `path` (basename(3) without its "/" and "." cases).
    static func baseName(_ path: String) -> String {
        var name = Substring(path)
        while name.hasSuffix("/") { name = name.dropLast() }
        if let slash = name.lastIndex(of: "/") { name = name[name.index(after: slash)...] }
        return name.isEmpty ? (path.isEmpty ? "keywell" : path) : String(name)
    }
}
