import CKeywellControl
import KeywellProtocol
import KeywellSystem
#if canImport(Glibc)
import Glibc
#endif

/// `keywell login-unlock enable|disable|status [user]`: the login keychain unlocked by a login
/// without a typed password, through the TPM (docs/login-unlock.md). `enable` needs root, which
/// alone may keep the authorization value; `disable` and `status` work for the user too.
enum LoginUnlockCommand {
    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        // Options may follow the action too (`enable --pcrs 0,7 alice`), as `access` takes them.
        guard let action = invocation.operands.first, ["enable", "disable", "status"].contains(action) else {
            return CommandStatus.usage
        }
        var parser = GetoptParser(optionString: "p:", longFlags: [])
        parser.longValueOptions = [LoginUnlockPCRs.option]
        let after: GetoptParser.Result
        do {
            // `operands` are the tail of `words`: where they start in argv, for scrubbing `-p`.
            let start = (invocation.argvIndex ?? 0) + invocation.words.count - invocation.operands.count
            after = try parser.parse(invocation.operands, firstWordIndex: start)
        } catch {
            StandardStreams.error.write(error.getoptLine(argv0: "login-unlock \(action)"))
            return CommandStatus.usage
        }
        let passwordOption = after.option("p") ?? invocation.arguments.option("p")
        var password = passwordOption?.value.map { SecretBytes(copying: $0.utf8) }
        context.scrubFromArgv(invocation.arguments.option("p"))
        context.scrubFromArgv(after.option("p"))
        defer { password?.wipe() }
        let operands = [action] + after.operands
        guard (1...2).contains(operands.count) else { return CommandStatus.usage }
        let pcrText = after.longValues[LoginUnlockPCRs.option] ?? invocation.value(long: LoginUnlockPCRs.option)
        if pcrText != nil, action != "enable" {
            context.diagnostics.error("login-unlock: --\(LoginUnlockPCRs.option) goes with enable only")
            return CommandStatus.usage
        }
        let pcrs: LoginUnlockPCRs
        do throws(LoginUnlockPCRs.Problem) {
            pcrs = try LoginUnlockPCRs(parsing: pcrText ?? "")
        } catch {
            context.diagnostics.error("login-unlock enable: \(error.text)")
            return CommandStatus.failure
        }
        if pcrText != nil, !pcrs.isBound {
            context.diagnostics.error("login-unlock enable: --\(LoginUnlockPCRs.option) names no PCR (leave it out for no binding)")
            return CommandStatus.failure
        }
        let target: Target
        switch Target.resolve(operands.count == 2 ? operands[1] : nil) {
        case .success(let found): target = found
        case .failure(let problem):
            context.diagnostics.error("login-unlock: \(problem.text)")
            return CommandStatus.failure
        }
        switch action {
        case "enable": return enable(context, target, password: &password, pcrs: pcrs)
        case "disable": return disable(context, target)
        default: return status(context, target)
        }
    }

    // MARK: enable

    private static func enable(_ context: CommandContext, _ target: Target, password: inout SecretBytes?,
                               pcrs: LoginUnlockPCRs) -> Int32 {
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
        let tcti = SecretBytes(copying: (getenv(KeywellNames.tpmEnvironment).map { String(cString: $0) } ?? "").utf8)
        let answer: ControlChannel.Answer
        do {
            var fields = [password!, value, tcti]
            if pcrs.isBound { fields.append(SecretBytes(copying: pcrs.text.utf8)) }
            answer = try target.channel.send(Int32(KW_OP_LOGIN_UNLOCK_ENABLE), fields: fields)
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
        context.output.write(pcrs.isBound ? "bound to the boot state: SHA-256 PCRs \(pcrs.text)\n" : "not bound to the boot state\n")
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
            } else if unlink(target.enrolmentPath) != 0, Errno.current != .noEntry {
                context.diagnostics.error("login-unlock disable: cannot remove \(target.enrolmentPath): \(Errno.current.description)")
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
        let summary = EnrolmentSummary.load(target.enrolmentPath)
        let enrolled = summary != .absent
        // The user cannot see root's part; root sees both.
        let enabled = enrolled && (!target.asRoot || AuthorizationFile(uid: target.uid).exists)
        context.output.write(enabled ? "enabled\n" : "disabled\n")
        context.output.write("enrolment: \(target.enrolmentPath)\(enrolled ? "" : " (none)")\n")
        if target.asRoot {
            let file = AuthorizationFile(uid: target.uid)
            context.output.write("authorization value: \(file.path)\(file.exists ? "" : " (none)")\n")
        }
        switch summary {
        case .absent: break
        case .unreadable(let why): context.output.write("boot-state binding: unknown (\(why))\n")
        case .read(let pcrs, let changed):
            context.output.write(pcrs.isBound ? "bound to the boot state: SHA-256 PCRs \(pcrs.text)\n" : "not bound to the boot state\n")
            if let changed {
                context.output.write("boot state changed: a login at \(changed) found PCRs \(pcrs.text) changed (a firmware, boot loader "
                                     + "or kernel update?); the unlock at login no longer works: run `sudo keywell login-unlock enable` "
                                     + "again (the password login is unaffected)\n")
            }
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
