import KeywellNativeClient
import KeywellProtocol
import KeywellSystem
#if canImport(Glibc)
import Glibc
#endif

/// `keywell sync enable|join|status|conflicts|disable|rekey`: a keychain mirrored into a folder
/// that Syncthing, Nextcloud or git carries to the user's other machines (docs/sync.md).
/// getopt stops at the action word, so the words after it are parsed again with the same options.
enum SyncCommand {
    enum Action: String, CaseIterable {
        case enable, join, status, conflicts, disable, rekey
    }

    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        guard let first = invocation.operands.first, let action = Action(rawValue: first) else { return CommandStatus.usage }
        let parser = GetoptParser(optionString: spec.optionString, longFlags: spec.longFlags)
        var arguments: GetoptParser.Result
        do {
            arguments = try parser.parse(Array(invocation.operands), firstWordIndex: invocation.argvIndex ?? 0)
        } catch {
            StandardStreams.error.write(error.getoptLine(argv0: "sync \(action.rawValue)"))
            return CommandStatus.usage
        }
        if arguments.longFlags.contains("help") {
            StandardStreams.output.write(HelpCommand.fullHelp(spec, progname: context.progname))
            return CommandStatus.success
        }
        arguments.options = invocation.arguments.options + arguments.options
        arguments.longFlags.formUnion(invocation.arguments.longFlags)
        let passwordOption = arguments.option("p")
        var password = passwordOption?.value.map { SecretBytes(copying: $0.utf8) }
        context.scrubFromArgv(passwordOption)
        defer { password?.wipe() }
        let needsFolder = action == .enable || action == .join
        guard arguments.operands.count == (needsFolder ? 1 : 0) else { return CommandStatus.usage }
        let json = arguments.longFlags.contains("json")
        if json && action != .status && action != .conflicts { return CommandStatus.usage }
        if arguments.value("w") != nil && action != .conflicts { return CommandStatus.usage }
        let typed = arguments.value("k")
        do throws(KeychainError) {
            let keychain = try context.keychainName(typed)
            switch action {
            case .enable, .join:
                if password == nil {
                    guard let read = PasswordInput.read(prompt: "sync password: ") else { return CommandStatus.endOfInput }
                    password = read
                }
                try context.client.syncEnable(keychain, folder: absolute(arguments.operands[0]), password: password!,
                                              join: action == .join)
            case .rekey:
                if password == nil {
                    guard let read = PasswordInput.read(prompt: "new sync password: ") else { return CommandStatus.endOfInput }
                    password = read
                }
                try context.client.syncRekey(keychain, password: password!)
            case .disable:
                try context.client.syncDisable(keychain)
            case .status:
                status(try context.client.syncStatus(keychain), json: json, context)
            case .conflicts:
                let versions = try context.client.syncConflicts(keychain)
                if let wanted = arguments.value("w") {
                    guard let index = Int(wanted), index >= 1, index <= versions.count,
                          case .integer(let version)? = versions[index - 1][SyncConflictKey.version] else {
                        context.diagnostics.error("sync conflicts: no kept version \(wanted) (they are numbered from 1, in listing order)")
                        return CommandStatus.failure
                    }
                    let secret = try context.client.syncConflictSecret(keychain, version: version)
                    secret.withArray { context.output.writeSecret($0 + [0x0A]) }
                } else {
                    conflicts(versions, json: json, context)
                }
            }
            return CommandStatus.success
        } catch {
            context.diagnostics.error("sync \(action.rawValue): \(error.message)")
            if error.status != SecStatus.authFailed { context.diagnostics.hint(for: error, keychain: typed) }
            return error.status
        }
    }

    private static var spec: CommandSpec { CommandTable.all.first { $0.name == "sync" }! }

    private static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return cwd == "/" ? "/" + path : cwd + "/" + path
    }

    private static func text(_ dictionary: WireDictionary, _ key: String) -> String { dictionary[key]?.stringValue ?? "" }

    private static func status(_ status: WireDictionary, json: Bool, _ context: CommandContext) {
        let enabled = status[SyncStatusKey.enabled]?.boolValue ?? false
        let machines = (status[SyncStatusKey.machines]?.stringsValue ?? []).map { line -> (id: String, name: String, seen: String) in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            let seen = fields.count > 2 ? Int64(fields[2]).map { ItemJSON.iso8601(milliseconds: $0) } ?? "" : ""
            return (fields.first ?? "", fields.count > 1 ? fields[1] : "", seen)
        }
        let lastMerge = status[SyncStatusKey.lastMerge]?.integerValue ?? -1
        let refused = (status[SyncStatusKey.refused]?.stringsValue ?? []).map { line -> (file: String, reason: String) in
            let fields = line.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            return (fields.first ?? "", fields.count > 1 ? fields[1] : "")
        }
        if json {
            JSONOutput.write(.object([
                ("enabled", .bool(enabled)), ("folder", enabled ? .string(text(status, SyncStatusKey.folder)) : .null),
                ("machines", .array(machines.map { .object([("id", .string($0.id)), ("name", .string($0.name)), ("lastSeen", .string($0.seen))]) })),
                ("lastMerge", lastMerge < 0 ? .null : .string(ItemJSON.iso8601(milliseconds: lastMerge))),
                ("refused", .number(Int64(refused.count))),
                ("refusedFiles", .array(refused.map { .object([("file", .string($0.file)), ("reason", .string($0.reason))]) })),
            ]), to: context.output)
            return
        }
        guard enabled else {
            context.output.write("disabled\n")
            return
        }
        var lines = ["enabled \(text(status, SyncStatusKey.folder))"]
        lines += machines.map { "machine \($0.id) \($0.name) \($0.seen)" }
        lines.append("last merge: \(lastMerge < 0 ? "never" : ItemJSON.iso8601(milliseconds: lastMerge))")
        lines.append("refused: \(refused.count)")
        context.output.write(lines.joined(separator: "\n") + "\n")
    }

    private static func conflicts(_ versions: [WireDictionary], json: Bool, _ context: CommandContext) {
        func when(_ version: WireDictionary) -> String { ItemJSON.iso8601(milliseconds: version[SyncConflictKey.when]?.integerValue ?? 0) }
        if json {
            JSONOutput.write(.array(versions.map { version in
                .object([SyncConflictKey.label, SyncConflictKey.service, SyncConflictKey.account].map { ($0, .string(text(version, $0))) }
                        + [(SyncConflictKey.when, .string(when(version))), (SyncConflictKey.machine, .string(text(version, SyncConflictKey.machine)))])
            }), to: context.output)
            return
        }
        for version in versions {
            let fields = [text(version, SyncConflictKey.label), text(version, SyncConflictKey.service), text(version, SyncConflictKey.account),
                          when(version), text(version, SyncConflictKey.machine)]
            context.output.write(fields.joined(separator: "\t") + "\n")
        }
    }
}
