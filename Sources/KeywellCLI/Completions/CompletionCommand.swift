/// `keywell completion bash|zsh|fish`: prints the script; the generated files are also in the
/// repository's completions/ folder for packagers.
enum CompletionCommand {
    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let operands = invocation.words.dropFirst()
        guard operands.count == 1, let shell = operands.first.flatMap(CompletionScripts.Shell.init(rawValue:)) else {
            let given = operands.count == 1 ? "unknown shell \"\(operands.first!)\"" : "needs exactly one shell"
            context.diagnostics.error("completion: \(given) (bash, zsh or fish)")
            if let spec = CommandTable.match("completion") { StandardStreams.error.write(HelpCommand.usageLines(spec)) }
            return CommandStatus.usage
        }
        context.output.write(CompletionScripts.script(for: shell))
        return CommandStatus.success
    }
}
