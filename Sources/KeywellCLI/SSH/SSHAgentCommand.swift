import FoundationEssentials
import KeywellProtocol

/// `keywell ssh-agent --print-socket`: where keywelld serves the OpenSSH agent (docs/ssh.md),
/// for `export SSH_AUTH_SOCK=$(keywell ssh-agent --print-socket)`.
enum SSHAgentCommand {
    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let words = Array(invocation.words.dropFirst())
        if words.contains("-h") || words.contains("--help") {
            context.output.write(help)
            return CommandStatus.success
        }
        guard words == ["--print-socket"] else {
            StandardStreams.error.write("usage: keywell ssh-agent --print-socket\n")
            return CommandStatus.usage
        }
        guard let path = socketPath() else {
            StandardStreams.error.write("keywell ssh-agent: XDG_RUNTIME_DIR is not set\n")
            return CommandStatus.failure
        }
        context.output.write(path + "\n")
        return CommandStatus.success
    }

    /// `$XDG_RUNTIME_DIR/keywell/ssh-agent`; nil without a runtime folder.
    static func socketPath() -> String? {
        guard let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty else { return nil }
        return runtime + "/" + KeywellNames.runtimeFolder + "/" + KeywellNames.sshAgentSocket
    }

    static let help = """
        Usage: keywell ssh-agent --print-socket

        Prints the path of the OpenSSH agent keywelld serves, $XDG_RUNTIME_DIR/keywell/ssh-agent.
        Point SSH_AUTH_SOCK at it (install.sh does, for desktop sessions, unless another agent
        claims it). ssh-add stores keys there in the default keychain; see docs/ssh.md.

        """
}
