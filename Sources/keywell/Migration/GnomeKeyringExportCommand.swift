#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import KeychainServices

/// `keywell export --format gnome-keyring [-f] [-k keychain] FILE`: a keychain as a keyring file
/// gnome-keyring-daemon opens (docs/migration.md, "The way back"). `export(...)` is the part
/// the general `export` command calls for this format.
enum GnomeKeyringExportCommand {
    static let usage = "usage: keywell export --format gnome-keyring [-f] [-k keychain] file"

    /// Writes `file` with `password` (asked for by the caller); `keychain` nil is the default keychain.
    static func export(_ context: CommandContext, keychain typed: String?, file: String, password: SecretBytes,
                       replace: Bool) -> Int32 {
        let target = file.hasPrefix("/") ? file : currentDirectory() + "/" + file
        do {
            let name = try context.keychainName(typed)
            try context.client.exportGnomeKeyring(name, to: target, password: password.bytes, replace: replace)
            return CommandStatus.success
        } catch {
            context.diagnostics.error("export \(typed ?? "<default>") to \(file): "
                                      + (error.detail.map { "\(error.message) (\($0))" } ?? error.message))
            context.diagnostics.hint(for: error, keychain: typed)
            return error.status
        }
    }

    /// Until the general `export` command takes this format over: its words, parsed here.
    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        var words = Array(invocation.words.dropFirst())
        var keychain: String?
        var replace = false
        var format: String?
        var operands: [String] = []
        while !words.isEmpty {
            let word = words.removeFirst()
            switch word {
            case "-f": replace = true
            case "-k", "--format":
                guard let value = words.first else { return usageError() }
                words.removeFirst()
                if word == "-k" { keychain = value } else { format = value }
            default:
                if word.hasPrefix("--format=") { format = String(word.dropFirst("--format=".count)); continue }
                guard !word.hasPrefix("-") || word == "-" else { return usageError() }
                operands.append(word)
            }
        }
        guard format == "gnome-keyring", operands.count == 1, !operands[0].isEmpty else { return usageError() }
        let password: SecretBytes
        if isatty(0) == 1 {
            switch PasswordInput.readNew(prompt: "password for the keyring file: ", retypePrompt: "retype password: ", attempts: 3,
                                         onMismatch: { StandardStreams.error.write("passwords don't match\n") }) {
            case .password(let typed): password = typed
            case .endOfInput: return CommandStatus.endOfInput
            case .mismatch: return CommandStatus.failure
            }
        } else {
            guard let line = PasswordInput.read(prompt: "password for the keyring file: ") else { return CommandStatus.endOfInput }
            password = line
        }
        defer { password.wipe() }
        return export(context, keychain: keychain, file: operands[0], password: password, replace: replace)
    }

    private static func usageError() -> Int32 {
        StandardStreams.error.write(usage + "\n")
        return CommandStatus.usage
    }

    private static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
