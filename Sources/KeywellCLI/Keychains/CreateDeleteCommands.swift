import KeywellNativeClient
import KeywellSystem

/// `create-keychain` and `delete-keychain`.
enum CreateDeleteCommands {
    static func createKeychain(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        // -P asks macOS's SecurityAgent; Linux has no such agent.
        if invocation.has("P") { return CommandStatus.usage }
        let passwordOption = invocation.arguments.option("p")
        let flagPassword = passwordOption?.value.map { SecretBytes(copying: $0.utf8) }
        context.scrubFromArgv(passwordOption)
        defer { flagPassword?.wipe() }

        var names = invocation.operands
        if names.isEmpty {
            guard let typed = PasswordInput.readVisible(prompt: "keychain to create: ") else { return CommandStatus.endOfInput }
            names = [typed]
        }
        var result = CommandStatus.success
        for name in names {
            let password: SecretBytes
            if let flagPassword {
                password = flagPassword
            } else {
                switch PasswordInput.readNew(prompt: "password for new keychain: ",
                                             retypePrompt: "retype password for new keychain: ", attempts: 3,
                                             onMismatch: { context.diagnostics.line("passwords don't match") }) {
                case .password(let typed): password = typed
                case .endOfInput: return CommandStatus.endOfInput
                case .mismatch: return CommandStatus.failure
                }
            }
            do {
                try context.client.createKeychain(context.naming.daemonName(for: name), password: password)
                if password.isEmpty {
                    context.diagnostics.hint("warning: keychain \"\(name)\" has an empty password; anyone who can read its file can open it")
                }
            } catch {
                context.diagnostics.error("SecKeychainCreate \(name): \(error.message)")
                if error.status == SecStatus.duplicateKeychain {
                    context.diagnostics.hint("use `\(context.progname) unlock-keychain \(ShellQuoting.quote(name))` to open the existing one")
                } else {
                    context.diagnostics.hint(for: error, keychain: name)
                }
                result = error.status
            }
            if flagPassword == nil { password.wipe() }
        }
        return result
    }

    static func deleteKeychain(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        guard !invocation.operands.isEmpty else {
            context.diagnostics.perror("SecKeychainDelete", SecStatus.invalidKeychain)
            return SecStatus.invalidKeychain
        }
        var result = CommandStatus.success
        for name in invocation.operands {
            do {
                try context.client.deleteKeychain(context.naming.daemonName(for: name))
            } catch {
                context.diagnostics.perror("SecKeychainDelete", error.status)
                context.diagnostics.hint(for: error, keychain: name)
                result = error.status
            }
        }
        return result
    }
}
