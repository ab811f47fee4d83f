import FoundationEssentials
import KeywellNativeClient
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// `import [-k keychain] [--skip|--replace|--newer] [--format keywell|csv] [--plaintext] file`
/// (docs/export-import.md). keywelld reads and merges an encrypted export in one transaction;
/// keychains it names that do not exist are created first (their passwords asked here),
/// unless `-k` puts everything into one keychain.
enum ImportCommand {
    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let operands = invocation.operands
        guard operands.count == 1, !operands[0].isEmpty else { return CommandStatus.usage }
        let path = operands[0]
        let policies = ["skip", "replace", "newer"].filter { invocation.has(long: $0) }
        guard policies.count <= 1 else {
            context.diagnostics.error("import: --skip, --replace and --newer exclude one another")
            return CommandStatus.usage
        }
        let policy = policies.first ?? "skip"
        let target = invocation.value("k").map(context.naming.daemonName)
        switch invocation.value(long: "format") ?? TransferOptions.keywellFormat {
        case TransferOptions.keywellFormat:
            return importEncrypted(context, path, into: target, policy: policy)
        case TransferOptions.csvFormat:
            guard TransferOptions.allowsPlaintext(context, invocation, path: path) else { return CommandStatus.failure }
            return CSVImport.run(context, path, into: target, policy: policy)
        default:
            context.diagnostics.error("import: unknown format \(ShellQuoting.quote(invocation.value(long: "format") ?? "")) (keywell, csv)")
            return CommandStatus.usage
        }
    }

    private static func importEncrypted(_ context: CommandContext, _ path: String, into target: String?, policy: String) -> Int32 {
        let file: FileDescriptor
        do { file = try TransferFiles.openForReading(path) } catch {
            context.diagnostics.error("import: \(path): \(error)")
            return CommandStatus.failure
        }
        defer { try? file.close() }
        let fd = file.rawValue
        guard let passphrase = PasswordInput.read(prompt: "passphrase of the export: ") else { return CommandStatus.endOfInput }
        defer { passphrase.wipe() }
        do {
            if target == nil {
                let (names, _) = try context.client.inspectExport(fd, passphrase: passphrase)
                let existing = Set(try context.client.listKeychains())
                for name in names where !existing.contains(name) {
                    let status = create(context, name)
                    guard status == CommandStatus.success else { return status }
                }
            }
            let counts = try context.client.importExport(fd, passphrase: passphrase, into: target ?? "", policy: policy)
            context.output.write("imported \(path): \(counts.added) added, \(counts.replaced) replaced, \(counts.skipped) skipped\n")
            return CommandStatus.success
        } catch {
            context.diagnostics.error("import: \(error.explanation); nothing was imported")
            context.diagnostics.hintingAnywhere.hint(for: error, keychain: target)
            return error.status
        }
    }

    /// A keychain of the export that the account lacks, made with a password asked for it.
    private static func create(_ context: CommandContext, _ name: String) -> Int32 {
        let password: SecretBytes
        switch TransferOptions.newSecret(context, prompt: "password for new keychain \"\(name)\": ",
                                         retype: "retype password for new keychain \"\(name)\": ") {
        case .password(let typed): password = typed
        case .endOfInput: return CommandStatus.endOfInput
        case .mismatch: return CommandStatus.failure
        }
        defer { password.wipe() }
        do {
            _ = try context.client.createKeychain(name, password: password)
            return CommandStatus.success
        } catch {
            context.diagnostics.error("import: creating keychain \(name): \(error.explanation); nothing was imported")
            return error.status
        }
    }
}
