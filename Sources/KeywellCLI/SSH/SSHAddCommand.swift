import FoundationEssentials
import KeywellNativeClient
import KeywellSSHWire

/// `keywell ssh-add [-k KEYCHAIN] [-T PROGRAM]… FILE…`: imports OpenSSH private key files into a
/// keychain through keywelld's agent (docs/ssh.md). Each key trusts `/usr/bin/ssh`,
/// `/usr/bin/ssh-keygen` and each `-T` program; a file with a passphrase is asked about as
/// ssh-add asks. Each file is imported whole or not at all; the exit status is 1 when any failed.
enum SSHAddCommand {
    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let files = invocation.operands
        guard !files.isEmpty else { return CommandStatus.usage }
        guard let socket = SSHAgentCommand.socketPath() else {
            context.diagnostics.error("ssh-add: XDG_RUNTIME_DIR is not set: no agent to reach")
            return CommandStatus.failure
        }
        var trusted: [String] = []
        for path in invocation.arguments.values("T") where !path.isEmpty {
            do { trusted.append(try ExecutableIdentity.of(path: path)) } catch {
                context.diagnostics.error("ssh-add: -T \(path): \(error.message)")
                return CommandStatus.failure
            }
        }
        let keychain = invocation.value("k") ?? ""
        var status = CommandStatus.success
        for file in files {
            do {
                for comment in try importFile(file, keychain: keychain, trusted: trusted, socket: socket) {
                    StandardStreams.error.write("Identity added to \(keychain.isEmpty ? "the default keychain" : keychain): \(file) (\(comment))\n")
                }
            } catch {
                context.diagnostics.error("ssh-add: \(error.description)")
                status = CommandStatus.failure
            }
        }
        return status
    }

    /// Sends each key of the file as one `keychain-add@keywell` request; returns their comments.
    private static func importFile(_ path: String, keychain: String, trusted: [String], socket: String) throws(SSHAddError) -> [String] {
        let binary = try KeyFileReading.binary(of: path)
        defer { binary.wipe() }
        let keys: [OpenSSHKeyFile.Key]
        do { keys = try OpenSSHKeyFile.keys(of: binary.bytes) } catch { throw SSHAddError("\(path): \(error.reason)") }
        let client = try AgentSocketClient(path: socket)
        var comments: [String] = []
        for key in keys {
            var request = SSHWireWriter()
            request.byte(AgentMessage.extension.rawValue)
            request.text(AgentExtension.keychainAdd)
            request.text(keychain)
            request.uint32(UInt32(trusted.count))
            for identity in trusted { request.text(identity) }
            var body = request.bytes + key.agentEncoding
            request = SSHWireWriter()
            var comment = SSHWireWriter()
            comment.text(key.comment)
            body += comment.bytes
            defer { body.withUnsafeMutableBytes { Memory.wipe($0) } }
            let reply = try client.request(body)
            guard reply == [AgentMessage.success.rawValue] else {
                throw SSHAddError("\(path): keywelld did not store the key (its log says why: a locked or missing keychain, "
                                  + "an unsupported key)")
            }
            comments.append(key.comment)
        }
        return comments
    }
}
