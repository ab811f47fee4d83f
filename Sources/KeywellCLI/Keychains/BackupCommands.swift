import KeywellNativeClient

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `backup` and `restore`: Keywell's own (docs/cli.md, "Backing up"). The daemon does the work,
/// since it owns the keychain files; paths are made absolute here, where the current folder is.
enum BackupCommands {
    static func backup(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let operands = invocation.operands
        guard operands.count == 1, !operands[0].isEmpty else { return CommandStatus.usage }
        let typed = invocation.value("k")
        let target = absolute(operands[0])
        do {
            let name = try context.keychainName(typed)
            try context.client.backupKeychain(name, to: target, replace: invocation.has("f"))
            return CommandStatus.success
        } catch {
            context.diagnostics.error("backup \(typed ?? "<default>") to \(operands[0]): \(error.explanation)")
            context.diagnostics.hint(for: error, keychain: typed)
            return error.status
        }
    }

    static func restore(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let operands = invocation.operands
        guard (1...2).contains(operands.count), !operands[0].isEmpty else { return CommandStatus.usage }
        let source = absolute(operands[0])
        let typedName = operands.count == 2 ? operands[1] : defaultName(for: source)
        do {
            let name = context.naming.daemonName(for: typedName)
            _ = try context.client.restoreKeychain(from: source, as: name, replace: invocation.has("f"))
            return CommandStatus.success
        } catch {
            context.diagnostics.error("restore \(operands[0]) as \(typedName): \(error.explanation)")
            return error.status
        }
    }

    /// The file's name without `.keychain-db` or `.keychain`: `login.keychain-db` restores as `login`.
    static func defaultName(for path: String) -> String {
        // The last path component (trailing slashes ignored).
        var name = path.split(separator: "/").last.map(String.init) ?? path
        for suffix in [".keychain-db", ".keychain"] where name.hasSuffix(suffix) && name.count > suffix.count {
            name.removeLast(suffix.count)
            break
        }
        return name
    }

    private static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}
