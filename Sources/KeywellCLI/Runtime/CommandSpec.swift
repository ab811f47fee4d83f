/// One subcommand: what `security` prints about it (usage, one-line help), its getopt letters,
/// and what completion scripts offer for its option values and operands. The dispatcher,
/// `help`, `--help` and the completion scripts all read these, so they cannot disagree.
struct CommandSpec: Sendable {
    let name: String
    /// `security`'s usage text: the synopsis, then one line per option, then any notes.
    let synopsis: String
    let options: [OptionSpec]
    let usageNotes: [String]
    /// The one-line description (`security help` lists these), exactly as `security` has it.
    let summary: String
    /// What `--help` says instead where `security`'s line is wrong (create-keychain's "and add
    /// them to the search list": it does not, on macOS either).
    let correctedSummary: String?
    let operands: ValueCompletion
    /// Whether `--json` is accepted.
    let json: Bool
    /// More text for `--help` only (Keywell's additions and warnings).
    let helpNotes: [String]
    /// false: the command reads its words itself (`help`, `error`, the Keywell-only commands).
    let usesGetopt: Bool
    /// The command prints its own `--help` (its words are not getopt's).
    let ownHelp: Bool
    /// `-w` as the very last word means "ask for the password" (it would otherwise lack its
    /// value): `security`'s add commands look for it before getopt runs.
    let trailingWPrompts: Bool
    /// `h` is one of `security`'s getopt letters for the command, so `-h` is its usage without a
    /// getopt complaint (every command but show-keychain-info).
    let knowsDashH: Bool
    /// Keywell's own long flags (`--all`, `--replace`) besides `--help` and `--json`.
    let extraLongFlags: Set<String>
    /// Keywell's own long options with a value (`--format csv`).
    let longValueOptions: Set<String>
    /// `--help`'s lines for those long options (`    --all  …`).
    let longOptionHelp: [String]
    /// Plumbing that programs run (the autostart entry's `session-display`): left out of the
    /// command list `help` prints, still documented in its `--help` and the man page.
    let hidden: Bool
    let run: @Sendable (CommandContext, Invocation) -> Int32

    init(_ name: String, synopsis: String, options: [OptionSpec] = [], usageNotes: [String] = [],
         summary: String, correctedSummary: String? = nil, operands: ValueCompletion = .none, json: Bool = false, helpNotes: [String] = [],
         usesGetopt: Bool = true, trailingWPrompts: Bool = false, ownHelp: Bool = false, knowsDashH: Bool = true,
         extraLongFlags: Set<String> = [], longValueOptions: Set<String> = [], longOptionHelp: [String] = [],
         hidden: Bool = false, run: @escaping @Sendable (CommandContext, Invocation) -> Int32) {
        self.name = name
        self.synopsis = synopsis
        self.options = options
        self.usageNotes = usageNotes
        self.summary = summary
        self.correctedSummary = correctedSummary
        self.operands = operands
        self.json = json
        self.helpNotes = helpNotes
        self.usesGetopt = usesGetopt
        self.ownHelp = ownHelp
        self.trailingWPrompts = trailingWPrompts
        self.knowsDashH = knowsDashH
        self.extraLongFlags = extraLongFlags
        self.longValueOptions = longValueOptions
        self.longOptionHelp = longOptionHelp
        self.hidden = hidden
        self.run = run
    }

    /// The getopt option string (`a:c:gw`), hidden options included.
    var optionString: String {
        options.map { String($0.letter) + ($0.valueName == nil ? "" : ":") }.joined()
    }

    var longFlags: Set<String> { Set(json ? ["help", "json"] : ["help"]).union(extraLongFlags) }

    /// Whether getopt(3) prints its own line for `failure` before the usage. The add commands'
    /// option strings start with `:` (that is how a `-w` without a value comes to prompt), which
    /// silences getopt; elsewhere only `-h`, where the command knows it, passes in silence.
    func getoptComplains(about failure: GetoptParser.Failure) -> Bool {
        if trailingWPrompts { return false }
        return !(knowsDashH && failure == .unknownOption("-h"))
    }

    /// The text after `Usage: <name> `.
    var usage: String {
        var lines = [synopsis]
        lines += options.filter { !$0.hidden }.map { "    -\($0.letter)  \($0.help)" }
        lines += usageNotes
        return lines.joined(separator: "\n")
    }
}

struct OptionSpec: Sendable {
    let letter: Character
    /// The value's name in help text, nil for a flag.
    let valueName: String?
    let help: String
    var hidden = false
    var completion: ValueCompletion = .none

    static func flag(_ letter: Character, _ help: String, hidden: Bool = false) -> OptionSpec {
        OptionSpec(letter: letter, valueName: nil, help: help, hidden: hidden)
    }

    static func value(_ letter: Character, _ name: String, _ help: String, hidden: Bool = false,
                      completion: ValueCompletion = .none) -> OptionSpec {
        OptionSpec(letter: letter, valueName: name, help: help, hidden: hidden, completion: completion)
    }
}

/// What a shell may offer for a value.
enum ValueCompletion: Equatable, Sendable {
    case none
    case keychains
    case protocols
    case authenticationTypes
    case domains
    case commands
    case files
    case words([String])
}

/// A command's words after dispatch: `words[0]` is the command as typed.
struct Invocation {
    let words: [String]
    /// Where `words[0]` sits in the process's argv; nil for interactive input.
    let argvIndex: Int?
    /// The parsed options (empty for commands that read their words themselves).
    let arguments: GetoptParser.Result
    /// A trailing `-w` was taken off the words (see `CommandSpec.trailingWPrompts`).
    var promptsForPassword = false

    var json: Bool { arguments.longFlags.contains("json") }
    var operands: [String] { arguments.operands }

    func has(_ letter: Character) -> Bool { arguments.has(letter) }
    func has(long flag: String) -> Bool { arguments.longFlags.contains(flag) }
    func value(_ letter: Character) -> String? { arguments.value(letter) }
    func value(long name: String) -> String? { arguments.longValues[name] }
}

/// A command's early end with this status (its message, if any, already printed).
struct CommandExit: Error {
    let status: Int32
}

/// Return values with a meaning of their own in `security`'s command functions.
enum CommandStatus {
    static let success: Int32 = 0
    /// Print the usage and exit 2.
    static let usage: Int32 = 2
    static let failure: Int32 = 1
    /// End of input at a prompt (exit 255).
    static let endOfInput: Int32 = -1
}
