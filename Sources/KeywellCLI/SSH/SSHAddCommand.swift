import FoundationEssentials
import KeywellNativeClient
import KeywellSSHWire
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// `keywell ssh-add [-k KEYCHAIN] [-T PROGRAM]… FILE…`: imports OpenSSH private key files into a
/// keychain through keywelld's agent (docs/ssh.md). Each key trusts `/usr/bin/ssh`,
/// `/usr/bin/ssh-keygen` and each `-T` program; a file with a passphrase is asked about as
/// ssh-add asks. `FILE-cert.pub`, when there, joins its key's item as ssh-add adds it. Each file
/// is imported whole or not at all; the exit status is 1 when any failed.
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
        let place = keychain.isEmpty ? "the default keychain" : keychain
        var status = CommandStatus.success
        for file in files {
            do {
                let added = try importFile(file, keychain: keychain, trusted: trusted, socket: socket)
                for comment in added.comments {
                    StandardStreams.error.write("Identity added to \(place): \(file) (\(comment))\n")
                }
                if let certificate = added.certificate {
                    StandardStreams.error.write("Certificate added to \(place): \(certificate)\n")
                }
            } catch {
                context.diagnostics.error("ssh-add: \(error.description)")
                status = CommandStatus.failure
            }
        }
        return status
    }

    /// Sends each key of the file as one `keychain-add@keywell` request, then `FILE-cert.pub`
    /// with its key when the file holds one key and the certificate is there; returns the keys'
    /// comments and the certificate's path when one was added.
    private static func importFile(_ path: String, keychain: String, trusted: [String], socket: String)
        throws(SSHAddError) -> (comments: [String], certificate: String?)
    {
        let binary = try KeyFileReading.binary(of: path)
        defer { binary.wipe() }
        let keys: [OpenSSHKeyFile.Key]
        do { keys = try binary.withArray { bytes throws(AgentParseError) in try OpenSSHKeyFile.keys(of: bytes) } } catch { throw SSHAddError("\(path): \(error.reason)") }
        let client = try AgentSocketClient(path: socket)
        var comments: [String] = []
        for key in keys {
            guard try add(key.agentEncoding, comment: key.comment, keychain: keychain, trusted: trusted, client: client) else {
                throw SSHAddError("\(path): keywelld did not store the key (its log says why: a locked or missing keychain, "
                                  + "an unsupported key)")
            }
            comments.append(key.comment)
        }
        let certificatePath = path + "-cert.pub"
        guard keys.count == 1, let blob = try KeyFileReading.certificate(at: certificatePath) else { return (comments, nil) }
        var encoding: [UInt8]
        do { encoding = try SSHCertificate(blob).agentEncoding(blob, key: keys[0].agentEncoding) } catch {
            throw SSHAddError("\(certificatePath): \(error.reason)")
        }
        defer { encoding.withUnsafeMutableBytes { SecretMemory.wipe($0) } }
        guard try add(encoding, comment: keys[0].comment, keychain: keychain, trusted: trusted, client: client) else {
            throw SSHAddError("\(certificatePath): keywelld did not store the certificate (its log says why: a signature that "
                              + "does not verify, a certificate of another key, too many certificates)")
        }
        return (comments, certificatePath)
    }

    /// One `keychain-add@keywell` request for a key (or certificate and key) in the agent's
    /// encoding; whether keywelld stored it.
    private static func add(_ encoding: some Collection<UInt8>, comment: String, keychain: String, trusted: [String],
                            client: borrowing AgentSocketClient) throws(SSHAddError) -> Bool {
        var request = SSHWireWriter()
        request.byte(AgentMessage.extension.rawValue)
        request.text(AgentExtension.keychainAdd)
        request.text(keychain)
        request.uint32(UInt32(trusted.count))
        for identity in trusted { request.text(identity) }
        var body = request.bytes + encoding
        var commentField = SSHWireWriter()
        commentField.text(comment)
        body += commentField.bytes
        defer { body.withUnsafeMutableBytes { SecretMemory.wipe($0) } }
        return try client.request(body) == [AgentMessage.success.rawValue]
    }
}
