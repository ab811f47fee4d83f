import CKeywellControl
import KeywellProtocol
#if canImport(Glibc)
import Glibc
#endif

/// `keywell login-unlock enable|disable|status [user]`: the login keychain unlocked by a login
/// without a typed password, through the TPM (docs/login-unlock.md). `enable` needs root, which
/// alone may keep the authorization value; `disable` and `status` work for the user too.
enum LoginUnlockCommand {
    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let operands = invocation.operands
        let passwordOption = invocation.arguments.option("p")
        var password = passwordOption?.value.map { SecretBytes(Array($0.utf8)) }
        context.scrubFromArgv(passwordOption)
        defer { password?.wipe() }
        guard (1...2).contains(operands.count), ["enable", "disable", "status"].contains(operands[0]) else {
            return CommandStatus.usage
        }
        let target: Target
        switch Target.resolve(operands.count == 2 ? operands[1] : nil) {
        case .success(let found): target = found
        case .failure(let problem):
            context.diagnostics.error("login-unlock: \(problem.text)")
            return CommandStatus.failure
        }
        switch operands[0] {
        case "enable": return enable(context, target, password: &password)
        case "disable": return disable(context, target)
        default: return status(context, target)
        }
    }

    // MARK: enable

    private static func enable(_ context: CommandContext, _ target: Target, password: inout SecretBytes?) -> Int32 {
        guard target.asRoot else {
            context.diagnostics.error("login-unlock enable: needs root, which alone keeps the value that lets a login unseal "
                                      + "the key: run `sudo keywell login-unlock enable`")
            return CommandStatus.failure
        }
        if password == nil {
            guard let typed = PasswordInput.read(prompt: "login password of \(target.name): ") else { return CommandStatus.endOfInput }
            password = typed
        }
        let value = AuthorizationFile.newValue()
        defer { value.wipe() }
        let tcti = SecretBytes(Array((getenv(KeywellNames.tpmEnvironment).map { String(cString: $0) } ?? "").utf8))
        let answer: ControlChannel.Answer
        do {
            answer = try target.channel.send(Int32(KW_OP_LOGIN_UNLOCK_ENABLE), fields: [password!, value, tcti])
        } catch {
            context.diagnostics.error("login-unlock enable: \(describe(error, target))")
            return CommandStatus.failure
        }
        guard answer.status == SecStatus.success else {
            context.diagnostics.error("login-unlock enable: \(answer.message.isEmpty ? SecStatus.message(for: answer.status) : answer.message)")
            return answer.status
        }
        do {
            try AuthorizationFile(uid: target.uid).write(value)
        } catch {
            // Without the value the enrolment is useless: take it back, so that nothing changed.
            _ = try? target.channel.send(Int32(KW_OP_LOGIN_UNLOCK_DISABLE), fields: [])
            if case .io(let text) = error { context.diagnostics.error("login-unlock enable: \(text)") }
            return CommandStatus.failure
        }
        context.output.write("enabled\n")
        return CommandStatus.success
    }

    // MARK: disable

    private static func disable(_ context: CommandContext, _ target: Target) -> Int32 {
        var failed = false
        do {
            let answer = try target.channel.send(Int32(KW_OP_LOGIN_UNLOCK_DISABLE), fields: [])
            if answer.status != SecStatus.success {
                context.diagnostics.error("login-unlock disable: \(answer.message)")
                failed = true
            }
        } catch {
            if target.asRoot {
                // The user's files stay until the user's daemon runs; without root's value they open nothing.
                context.diagnostics.error("login-unlock disable: \(describe(error, target)); "
                                          + "only the authorization value is removed")
            } else if unlink(target.enrolmentPath) != 0, errno != ENOENT {
                context.diagnostics.error("login-unlock disable: cannot remove \(target.enrolmentPath): \(String(cString: strerror(errno)))")
                failed = true
            }
        }
        if target.asRoot { AuthorizationFile(uid: target.uid).remove() }
        guard !failed else { return CommandStatus.failure }
        context.output.write("disabled\n")
        return CommandStatus.success
    }

    // MARK: status

    private static func status(_ context: CommandContext, _ target: Target) -> Int32 {
        var info = stat()
        let enrolled = stat(target.enrolmentPath, &info) == 0
        // The user cannot see root's part; root sees both.
        let enabled = enrolled && (!target.asRoot || AuthorizationFile(uid: target.uid).exists)
        context.output.write(enabled ? "enabled\n" : "disabled\n")
        context.output.write("enrolment: \(target.enrolmentPath)\(enrolled ? "" : " (none)")\n")
        if target.asRoot {
            let file = AuthorizationFile(uid: target.uid)
            context.output.write("authorization value: \(file.path)\(file.exists ? "" : " (none)")\n")
        }
        return CommandStatus.success
    }

    private static func describe(_ error: ControlChannel.Failure, _ target: Target) -> String {
        switch error {
        case .absent(let text): "keywelld is not running for \(target.name) (\(text)); log in once, or start it"
        case .refused(let text): "refusing to talk to keywelld: \(text)"
        case .noAnswer: "keywelld did not answer"
        }
    }
}
