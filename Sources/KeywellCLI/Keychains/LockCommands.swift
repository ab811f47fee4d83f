import KeywellNativeClient
import KeywellSystem

/// `lock-keychain` and `unlock-keychain`.
enum LockCommands {
    static func lockKeychain(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let operands = invocation.operands
        if invocation.has("a") {
            guard operands.isEmpty else { return CommandStatus.usage }
            do {
                try context.client.lockAll()
                return CommandStatus.success
            } catch {
                context.diagnostics.perror("SecKeychainLockAll", error.status)
                context.diagnostics.hint(for: error, keychain: nil)
                return error.status
            }
        }
        guard operands.count <= 1 else { return CommandStatus.usage }
        let typed = operands.first
        do {
            let name = try context.keychainName(typed)
            try context.client.lock(name)
            return CommandStatus.success
        } catch {
            context.diagnostics.error("SecKeychainLock \(typed ?? "<NULL>"): \(error.message)")
            context.diagnostics.hint(for: error, keychain: typed)
            return error.status
        }
    }

    static func unlockKeychain(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let operands = invocation.operands
        guard operands.count <= 1, operands.first != "" else { return CommandStatus.usage }
        let typed = operands.first
        let passwordOption = invocation.arguments.option("p")
        var password = passwordOption?.value.map { SecretBytes(copying: $0.utf8) }
        context.scrubFromArgv(passwordOption)
        defer { password?.wipe() }

        let name: String
        do {
            name = try context.keychainName(typed)
        } catch {
            context.diagnostics.error("SecKeychainUnlock \(typed ?? "<NULL>"): \(error.message)")
            context.diagnostics.hint(for: error, keychain: typed)
            return error.status
        }
        // -u asks macOS's SecurityAgent instead of using a password; Linux has no such UI.
        if invocation.has("u") {
            context.diagnostics.error("SecKeychainUnlock \(typed ?? "<NULL>"): \(SecStatus.message(for: SecStatus.interactionNotAllowed))")
            return SecStatus.interactionNotAllowed
        }
        if password == nil {
            guard let typedPassword = PasswordInput.read(prompt: "password to unlock \(typed ?? "default"): ") else {
                return CommandStatus.endOfInput
            }
            password = typedPassword
        }
        do {
            try context.client.unlock(name, password: password!)
            return CommandStatus.success
        } catch {
            context.diagnostics.error("SecKeychainUnlock \(typed ?? "<NULL>"): \(error.message)")
            if error.status != SecStatus.authFailed { context.diagnostics.hint(for: error, keychain: typed) }
            return error.status
        }
    }
}
