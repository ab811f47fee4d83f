/// `help [command...]` and the texts around it: the global usage, `Usage:` lines, `--help`.
enum HelpCommand {
    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let names = invocation.words.dropFirst()
        guard !names.isEmpty else {
            context.output.write(commandList())
            return CommandStatus.success
        }
        for name in names {
            // Abbreviations work here too (`help find` is find-generic-password), as in `security`.
            guard let spec = CommandTable.match(name) else {
                context.diagnostics.error("help: no such command: \(name)")
                return CommandStatus.failure
            }
            context.output.write("Usage: \(spec.name) \(spec.usage)\n")
        }
        return CommandStatus.success
    }

    static func commandList() -> String {
        CommandTable.all.filter { !$0.hidden }.map { spec in
            // printf's `%-36s`, as `security` lists them.
            let padded = spec.name.count >= 36 ? spec.name : spec.name + String(repeating: " ", count: 36 - spec.name.count)
            return "    \(padded) \(spec.summary)\n"
        }.joined()
    }

    /// What `keywell` with no command, or with `-h`, prints on stdout (exit 2), word for word as
    /// `security` does; `--help` prints it too, with exit 0 and Keywell's notes after it.
    static func globalUsage(progname: String, notes: Bool = false) -> String {
        var text = """
            Usage: \(progname) [-h] [-i] [-l] [-p prompt] [-q] [-v] [command] [opt ...]
                -i    Run in interactive mode.
                -l    Run /usr/bin/leaks -nocontext before exiting.
                -p    Set the prompt to "prompt" (implies -i).
                -q    Be less verbose.
                -v    Be more verbose about what's going on.
            \(progname) commands are:

            """ + commandList()
        if notes {
            text += """

                Keywell: -l is accepted and does nothing. Hint lines after errors appear only when stderr is a
                terminal, and -q turns them off there too. `\(progname) <command> --help` shows a command's full help,
                `\(progname) --version` the version.

                """
        }
        return text
    }

    /// `Usage: <cmd> <usage>` and the one-line help: what a command returning 2 prints on stderr.
    static func usageLines(_ spec: CommandSpec) -> String {
        "Usage: \(spec.name) \(spec.usage)\n        \(spec.summary)\n"
    }

    /// `<cmd> --help`: the usage, then Keywell's notes and long options, on stdout.
    static func fullHelp(_ spec: CommandSpec, progname: String) -> String {
        var text = "Usage: \(spec.name) \(spec.usage)\n        \(spec.correctedSummary ?? spec.summary)\n"
        if !spec.helpNotes.isEmpty {
            text += "\n" + spec.helpNotes.joined(separator: "\n") + "\n"
        }
        text += "\nKeywell options:\n"
        for line in spec.longOptionHelp { text += line + "\n" }
        if spec.json {
            text += "    --json  Print the result as JSON on stdout (fields above)\n"
        }
        text += "    --help  Show this help (-h prints the usage and exits 2, as in macOS security)\n"
        return text
    }
}
