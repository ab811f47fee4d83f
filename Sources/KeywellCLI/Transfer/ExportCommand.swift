import FoundationEssentials
import KeywellNativeClient
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// `export [-k keychain]... [--all] [--format keywell|csv] [--plaintext] file`
/// (docs/export-import.md). The encrypted format is written by keywelld, which holds the keys,
/// into a file created here and passed as a descriptor; CSV is written here from the items'
/// secrets, only with `--plaintext`.
enum ExportCommand {
    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let operands = invocation.operands
        guard operands.count == 1, !operands[0].isEmpty else { return CommandStatus.usage }
        let path = operands[0]
        let keychains: [String]
        do {
            keychains = try TransferOptions.keychains(context, invocation)
        } catch {
            context.diagnostics.error("export: \(error.explanation)")
            context.diagnostics.hintingAnywhere.hint(for: error, keychain: invocation.value("k"))
            return error.status
        }
        switch invocation.value(long: "format") ?? TransferOptions.keywellFormat {
        case TransferOptions.keywellFormat:
            return exportEncrypted(context, keychains, to: path)
        case TransferOptions.csvFormat:
            guard TransferOptions.allowsPlaintext(context, invocation, path: path) else { return CommandStatus.failure }
            return CSVExport.run(context, keychains, to: path)
        case TransferOptions.gnomeKeyringFormat:
            guard keychains.count == 1, !invocation.has(long: "all") else {
                context.diagnostics.error("export: a gnome-keyring file holds one keychain: name it with -k")
                return CommandStatus.usage
            }
            return exportGnomeKeyring(context, keychains[0], to: path, replace: invocation.has("f"))
        default:
            context.diagnostics.error("export: unknown format \(ShellQuoting.quote(invocation.value(long: "format") ?? "")) (keywell, csv, gnome-keyring)")
            return CommandStatus.usage
        }
    }

    private static func exportGnomeKeyring(_ context: CommandContext, _ keychain: String, to path: String, replace: Bool) -> Int32 {
        let password: SecretBytes
        switch TransferOptions.newSecret(context, prompt: "password for the keyring file: ", retype: "retype password: ") {
        case .password(let typed): password = typed
        case .endOfInput: return CommandStatus.endOfInput
        case .mismatch: return CommandStatus.failure
        }
        defer { password.wipe() }
        return GnomeKeyringExportCommand.export(context, keychain: keychain, file: path, password: password, replace: replace)
    }

    private static func exportEncrypted(_ context: CommandContext, _ keychains: [String], to path: String) -> Int32 {
        let passphrase: SecretBytes
        switch TransferOptions.newSecret(context, prompt: "passphrase for the export: ", retype: "retype passphrase: ") {
        case .password(let typed): passphrase = typed
        case .endOfInput: return CommandStatus.endOfInput
        case .mismatch: return CommandStatus.failure
        }
        defer { passphrase.wipe() }
        guard !passphrase.isEmpty else {
            context.diagnostics.error("export: an empty passphrase would protect nothing")
            return CommandStatus.failure
        }
        let file: FileDescriptor
        do { file = try TransferFiles.create(path) } catch {
            context.diagnostics.error("export: \(path): \(error)")
            return CommandStatus.failure
        }
        defer { try? file.close() }
        do {
            let written = try context.client.exportKeychains(keychains, to: file.rawValue, passphrase: passphrase)
            context.output.write("exported \(written.items) item\(written.items == 1 ? "" : "s") to \(path)\n")
            ThisDeviceOnlyReport.write(context, leftOut: written.thisDeviceOnly)
            return CommandStatus.success
        } catch {
            // A half-written file is no export: remove it.
            unlink(path)
            context.diagnostics.error("export: \(error.explanation)")
            context.diagnostics.hintingAnywhere.hint(for: error, keychain: keychains.count == 1 ? keychains[0] : nil)
            return error.status
        }
    }
}

/// What `export` and `import` share: keychains, the plaintext guard, secrets asked for.
enum TransferOptions {
    static let keywellFormat = "keywell"
    static let csvFormat = "csv"
    static let gnomeKeyringFormat = "gnome-keyring"

    /// `-k` (repeatable), `--all`, else the default keychain.
    static func keychains(_ context: CommandContext, _ invocation: Invocation) throws(KeychainError) -> [String] {
        if invocation.has(long: "all") { return try context.client.listKeychains() }
        let named = invocation.arguments.values("k").map(context.naming.daemonName)
        guard named.count <= ServiceLimits.keychainListLength else {
            throw .param("at most \(ServiceLimits.keychainListLength) keychains")
        }
        return named.isEmpty ? [try context.client.defaultKeychain()] : named
    }

    /// CSV only with `--plaintext`, and always with a warning.
    static func allowsPlaintext(_ context: CommandContext, _ invocation: Invocation, path: String) -> Bool {
        guard invocation.has(long: "plaintext") else {
            context.diagnostics.error("--format csv holds passwords in plaintext: add --plaintext to go on")
            return false
        }
        context.diagnostics.line("\(context.progname): warning: \(path) holds passwords in plaintext; delete it as soon as it has been used")
        return true
    }

    /// Typed twice on a terminal; one line of standard input otherwise.
    static func newSecret(_ context: CommandContext, prompt: String, retype: String) -> PasswordInput.NewPasswordOutcome {
        guard isatty(0) == 1 else {
            guard let line = PasswordInput.read(prompt: prompt) else { return .endOfInput }
            return .password(line)
        }
        return PasswordInput.readNew(prompt: prompt, retypePrompt: retype, attempts: 3,
                                     onMismatch: { context.diagnostics.line("passphrases don't match") })
    }
}
