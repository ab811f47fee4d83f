import ArgumentParser

/// `keywell completion bash|zsh|fish`: prints the script; the generated files are also in the
/// repository's completions/ folder for packagers.
struct CompletionArguments: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "completion",
        abstract: "Print the shell completion script for keywell.",
        discussion: """
            bash: keywell completion bash > ~/.local/share/bash-completion/completions/keywell
            zsh:  keywell completion zsh > "${fpath[1]}/_keywell"
            fish: keywell completion fish > ~/.config/fish/completions/keywell.fish
            """)

    @Argument(help: "The shell: bash, zsh or fish.")
    var shell: CompletionScripts.Shell
}

extension CompletionScripts.Shell: ExpressibleByArgument {}

enum CompletionCommand {
    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        do {
            let arguments = try CompletionArguments.parse(Array(invocation.words.dropFirst()))
            context.output.write(CompletionScripts.script(for: arguments.shell))
            return CommandStatus.success
        } catch {
            let message = CompletionArguments.fullMessage(for: error)
            let code = CompletionArguments.exitCode(for: error).rawValue
            if code == 0 { context.output.write(message + "\n") } else { StandardStreams.error.write(message + "\n") }
            return code
        }
    }
}
