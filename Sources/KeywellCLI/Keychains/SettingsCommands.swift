import KeywellNativeClient
import KeywellSystem

/// `set-keychain-settings`, `set-keychain-password` and `show-keychain-info`.
enum SettingsCommands {
    /// Keywell's own settings (macOS has neither): `--<name> on|off`, and the words
    /// `show-keychain-info` adds when they are on.
    static let screenLockOption = "lock-on-screen-lock"
    static let enforceAccessOption = "enforce-access"

    /// `--<name> on|off`: nil when absent; anything else is a usage error.
    private static func onOff(_ name: String, _ invocation: Invocation, _ context: CommandContext)
        -> Result<Bool?, CommandExit>
    {
        switch invocation.value(long: name) {
        case nil: return .success(nil)
        case "on": return .success(true)
        case "off": return .success(false)
        case let word?:
            context.diagnostics.error("--\(name) takes on or off, not \"\(word)\"")
            return .failure(CommandExit(status: CommandStatus.usage))
        }
    }

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
        // Keywell's own settings (docs/access-control.md, docs/auto-lock.md): absent = unchanged.
        let enforceAccess: Bool?, lockOnScreenLock: Bool?
        switch (onOff(enforceAccessOption, invocation, context), onOff(screenLockOption, invocation, context)) {
        case (.success(let access), .success(let screenLock)): (enforceAccess, lockOnScreenLock) = (access, screenLock)
        case (.failure(let exit), _), (_, .failure(let exit)): return exit.status
        }
        // macOS's flags not given are reset; -u without -t means nothing: no -t is always "no
        // timeout". Keywell's settings alone leave macOS's as they are.
        let lockFlagsGiven = invocation.has("l") || invocation.has("u") || invocation.has("t")
        let resetsLocking = (enforceAccess == nil && lockOnScreenLock == nil) || lockFlagsGiven
        let timeout = invocation.value("t").map { UInt32(clamping: atoi($0)) } ?? 0
        do {
            try context.client.setSettings(keychain.name, lockOnSleep: resetsLocking ? invocation.has("l") : nil,
                                           lockAfterSeconds: resetsLocking ? timeout : nil, enforceAccess: enforceAccess,
                                           lockOnScreenLock: lockOnScreenLock)
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
        var oldPassword = oldOption?.value.map { SecretBytes(copying: $0.utf8) }
        var newPassword = newOption?.value.map { SecretBytes(copying: $0.utf8) }
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
            guard typed.matches(retyped) else {
                context.diagnostics.error("try again")
                return CommandStatus.failure
            }
            newPassword = typed
        }
        do {
            try context.client.changePassword(name, oldPassword: oldPassword!, newPassword: newPassword!)
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
        // Keywell's own words, after the line macOS prints (which scripts may match), only when
        // on: a keychain with neither prints macOS's line exactly.
        if info.lockOnScreenLock { line += " " + screenLockOption }
        if info.enforceAccess { line += " " + enforceAccessOption }
        context.diagnostics.line(line)
        return CommandStatus.success
    }
}
