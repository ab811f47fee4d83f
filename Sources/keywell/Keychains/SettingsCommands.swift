import KeychainServices

/// `set-keychain-settings`, `set-keychain-password` and `show-keychain-info`.
enum SettingsCommands {
    /// The keychain argument (at most one) or the default keychain, with the text that error
    /// lines show for it: the argument as typed, or `<NULL>` for the default.
    private static func target(_ context: CommandContext, _ invocation: Invocation, function: String)
        -> Result<(name: String, shown: String), CommandExit>
    {
        let operands = invocation.operands
        guard operands.count <= 1 else { return .failure(CommandExit(status: CommandStatus.usage)) }
        let typed = operands.first
        do {
            let name = try context.keychainName(typed)
            return .success((name, typed ?? "<NULL>"))
        } catch {
            context.diagnostics.error("\(function) \(typed ?? "<NULL>"): \(error.message)")
            context.diagnostics.hint(for: error, keychain: typed)
            return .failure(CommandExit(status: error.status))
        }
    }

    static func setKeychainSettings(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let function = "SecKeychainSetSettings"
        let keychain: (name: String, shown: String)
        switch target(context, invocation, function: function) {
        case .success(let found): keychain = found
        case .failure(let exit): return exit.status
        }
        var enforceAccess: Bool?
        if let word = invocation.longValue("enforce-access") {
            switch word {
            case "on": enforceAccess = true
            case "off": enforceAccess = false
            default:
                context.diagnostics.error("--enforce-access takes on or off, not \"\(word)\"")
                return CommandStatus.usage
            }
        }
        // Flags not given are reset; -u without -t means nothing: no -t is always "no timeout".
        // --enforce-access alone changes only that.
        let lockFlagsGiven = invocation.has("l") || invocation.has("u") || invocation.has("t")
        let resetsLocking = enforceAccess == nil || lockFlagsGiven
        let timeout = invocation.value("t").map { UInt32(clamping: atoi($0)) } ?? 0
        do {
            try context.client.setSettings(keychain.name, lockOnSleep: resetsLocking ? invocation.has("l") : nil,
                                           lockAfterSeconds: resetsLocking ? timeout : nil, enforceAccess: enforceAccess)
            return CommandStatus.success
        } catch {
            context.diagnostics.error("\(function) \(keychain.shown): \(error.message)")
            context.diagnostics.hint(for: error, keychain: invocation.operands.first)
            return error.status
        }
    }

    static func setKeychainPassword(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let operands = invocation.operands
        guard operands.count <= 1 else { return CommandStatus.usage }
        let shown = operands.first ?? "<NULL>"
        func failed(_ status: OSStatus) -> Int32 {
            context.diagnostics.error("error changing password for \"\(shown)\": \(SecStatus.message(for: status))")
            context.diagnostics.hint(for: status, keychain: operands.first)
            return status
        }
        let name: String
        do {
            name = try context.keychainName(operands.first)
        } catch {
            return failed(error.status)
        }

        let oldOption = invocation.arguments.option("o")
        let newOption = invocation.arguments.option("p")
        var oldPassword = oldOption?.value.map { SecretBytes(Array($0.utf8)) }
        var newPassword = newOption?.value.map { SecretBytes(Array($0.utf8)) }
        context.scrubFromArgv(oldOption)
        context.scrubFromArgv(newOption)
        defer {
            oldPassword?.wipe()
            newPassword?.wipe()
        }
        if oldPassword == nil {
            guard let typed = PasswordInput.read(prompt: "Old Password: ") else { return CommandStatus.endOfInput }
            oldPassword = typed
        }
        if newPassword == nil {
            guard let typed = PasswordInput.read(prompt: "New Password: ") else { return CommandStatus.endOfInput }
            guard let retyped = PasswordInput.read(prompt: "Retype New Password: ") else { return CommandStatus.endOfInput }
            guard typed == retyped else {
                context.diagnostics.error("try again")
                return CommandStatus.failure
            }
            newPassword = typed
        }
        do {
            try context.client.changePassword(name, oldPassword: oldPassword!.bytes, newPassword: newPassword!.bytes)
            return CommandStatus.success
        } catch {
            return failed(error.status)
        }
    }

    static func showKeychainInfo(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let function = "SecKeychainCopySettings"
        let keychain: (name: String, shown: String)
        switch target(context, invocation, function: function) {
        case .success(let found): keychain = found
        case .failure(let exit): return exit.status
        }
        let info: KeychainInfo
        do {
            info = try context.client.info(keychain.name)
        } catch {
            context.diagnostics.error("\(function) \(keychain.shown): \(error.message)")
            context.diagnostics.hint(for: error, keychain: invocation.operands.first)
            return error.status
        }
        // JSON describes the keychain whatever its state; Keywell's daemon can read settings
        // of a locked keychain.
        if invocation.json {
            JSONOutput.write(KeychainJSON.info(info, context), to: context.output)
            return CommandStatus.success
        }
        // macOS cannot read a locked keychain's settings without its UI, and scripts see 36.
        if info.locked {
            let status = SecStatus.interactionNotAllowed
            context.diagnostics.error("\(function) \(keychain.shown): \(SecStatus.message(for: status))")
            context.diagnostics.hint(for: status, keychain: invocation.operands.first ?? info.name)
            return status
        }
        var line = "Keychain \"\(keychain.shown)\""
        if info.lockOnSleep { line += " lock-on-sleep" }
        line += info.lockAfterSeconds == 0 ? " no-timeout" : " timeout=\(info.lockAfterSeconds)s"
        // Keywell's addition, after macOS's words and only when on: a keychain from before
        // access lists prints macOS's line exactly.
        if info.enforceAccess { line += " enforce-access" }
        context.diagnostics.line(line)
        return CommandStatus.success
    }
}
