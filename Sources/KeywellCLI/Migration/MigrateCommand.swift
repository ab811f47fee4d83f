import FoundationEssentials
import KeywellDBus
import KeywellNativeClient
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// `keywell migrate [--keyring NAME] [--status]`: gnome-keyring's and libsecret's keyring
/// files into keychains (docs/migration.md). The daemon reads the files and does the work; this
/// asks for the passwords it needs, on the terminal or one line of standard input each.
/// The words are parsed here (not by getopt) so that other sources (`--from-secret-service`)
/// can join as flags of their own.
enum MigrateCommand {
    struct Arguments: Equatable {
        var keyring: String?
        var status = false
        var fromSecretService = false
    }

    /// nil: a word this command does not know (usage).
    static func parse(_ words: [String]) -> Arguments? {
        var arguments = Arguments()
        var index = 0
        while index < words.count {
            let word = words[index]
            switch word {
            case "--status": arguments.status = true
            case "--from-secret-service": arguments.fromSecretService = true
            case "--keyring":
                guard index + 1 < words.count, !words[index + 1].isEmpty else { return nil }
                arguments.keyring = words[index + 1]
                index += 1
            default:
                guard word.hasPrefix("--keyring="), word.count > "--keyring=".count else { return nil }
                arguments.keyring = String(word.dropFirst("--keyring=".count))
            }
            index += 1
        }
        // One source per run: files (optionally one keyring) or the running Secret Service.
        let sources = (arguments.status ? 1 : 0) + (arguments.fromSecretService ? 1 : 0)
        guard sources <= 1, !(arguments.keyring != nil && sources > 0) else { return nil }
        return arguments
    }

    static let usage = "usage: keywell migrate [--keyring NAME] | --status | --from-secret-service"

    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let words = Array(invocation.words.dropFirst())
        if words.contains("--help") || words.contains("-h") {
            context.output.write(usage + "\n" + help)
            return CommandStatus.success
        }
        guard let arguments = parse(words) else {
            StandardStreams.error.write(usage + "\n")
            return CommandStatus.usage
        }
        if arguments.fromSecretService { return SecretServiceMigrateCommand.run(context) }
        return arguments.status ? status(context) : migrate(context, keyring: arguments.keyring)
    }

    private static let help = """
        Imports gnome-keyring's keyrings (~/.local/share/keyrings/*.keyring, plaintext ones too) and
        libsecret/oo7 files (keyrings/v1/) into keychains: login.keyring into `login`, others into
        keychains of the same name. KWallet's wallets (~/.local/share/kwalletd/NAME.kwl with
        NAME.salt): kdewallet into the default keychain, others into keychains named NAME.
        Source files are never changed. Run it again at any time: it
        imports only items that are new or newer since the last run, and says what it did.
        A keyring the login password does not open asks for its own password.
          --keyring NAME   only this keyring or wallet (its file name without .keyring or .kwl)
          --status         what came from which file, when, and how many items
          --from-secret-service
                           copy every collection and item of the Secret Service that owns
                           org.freedesktop.secrets now (gnome-keyring, KeePassXC, KWallet, oo7)
                           while keywelld runs without that name; a collection goes to the
                           keychain with the same label (login to `login`); run again, only
                           what is new or newer is copied. Exits 1 when something was left behind.

        """

    private static func migrate(_ context: CommandContext, keyring: String?) -> Int32 {
        var reports: [[String: DBusValue]]
        do {
            reports = try context.client.migrateKeyrings(keyring ?? "", password: SecretBytes(count: 0))
        } catch {
            context.diagnostics.error("migrate: \(error.explanation)")
            return error.status
        }
        if reports.isEmpty {
            context.diagnostics.error("migrate: no keyring file\(keyring.map { " named \($0)" } ?? "") found in ~/.local/share/keyrings or ~/.local/share/kwalletd")
            return keyring == nil ? CommandStatus.success : CommandStatus.failure
        }
        var status = CommandStatus.success
        for index in reports.indices {
            var report = reports[index]
            var attempts = 0
            while let asked = outcome(report), [.needsPassword, .wrongPassword].contains(asked) {
                if asked == .wrongPassword { StandardStreams.error.write("\(field(report, MigrationKey.message))\n") }
                attempts += 1
                guard attempts <= (isatty(0) == 1 ? 3 : 1) else { break }
                guard let password = askPassword(for: report) else { return CommandStatus.endOfInput }
                do {
                    let again = try context.client.migrateKeyrings(field(report, MigrationKey.keyring), password: password)
                    password.wipe()
                    guard let same = again.first(where: { field($0, MigrationKey.path) == field(report, MigrationKey.path) }) else { break }
                    report = same
                } catch {
                    password.wipe()
                    context.diagnostics.error("migrate \(field(report, MigrationKey.keyring)): \(error.explanation)")
                    return error.status
                }
            }
            reports[index] = report
            context.output.write(line(report) + "\n")
            if let ended = outcome(report), [.failed, .needsPassword, .wrongPassword].contains(ended) { status = CommandStatus.failure }
        }
        return status
    }

    /// A plaintext keyring brings no password: the new keychain needs one.
    private static func askPassword(for report: [String: DBusValue]) -> SecretBytes? {
        let keyring = field(report, MigrationKey.keyring)
        guard field(report, MigrationKey.format) == KeyringFormat.gnomeKeyringPlaintext.rawValue else {
            let kind = field(report, MigrationKey.format) == KeyringFormat.kwallet.rawValue ? "wallet" : "keyring"
            return PasswordInput.read(prompt: "password for \(kind) \(keyring): ")
        }
        let prompt = "new password for keychain \(field(report, MigrationKey.keychain)): "
        guard isatty(0) == 1 else { return PasswordInput.read(prompt: prompt) }
        switch PasswordInput.readNew(prompt: prompt, retypePrompt: "retype new password: ", attempts: 3, onMismatch: {
            StandardStreams.error.write("passwords don't match\n")
        }) {
        case .password(let password): return password
        case .endOfInput, .mismatch: return nil
        }
    }

    static func line(_ report: [String: DBusValue]) -> String {
        var text = "\(field(report, MigrationKey.path)) → \(field(report, MigrationKey.keychain)): \(field(report, MigrationKey.outcome))"
        if let ended = outcome(report), [.imported, .unchanged].contains(ended) {
            text += " (\(number(report, MigrationKey.added)) added, \(number(report, MigrationKey.updated)) updated, \(number(report, MigrationKey.unchanged)) unchanged)"
        }
        let message = field(report, MigrationKey.message)
        if !message.isEmpty { text += ": \(message)" }
        return text
    }

    private static func status(_ context: CommandContext) -> Int32 {
        let sources: [[String: DBusValue]]
        do {
            sources = try context.client.migrationStatus()
        } catch {
            context.diagnostics.error("migrate --status: \(error.explanation)")
            return error.status
        }
        if sources.isEmpty { context.output.write("nothing imported yet\n") }
        for source in sources {
            context.output.write("""
                \(field(source, MigrationKey.path)) (\(field(source, MigrationKey.format))) → keychain \(field(source, MigrationKey.keychain)): \
                \(number(source, MigrationKey.items)) items; first imported \(date(source, MigrationKey.firstImported)); \
                last run \(date(source, MigrationKey.lastRun)): \(number(source, MigrationKey.added)) added, \(number(source, MigrationKey.updated)) updated, \
                \(number(source, MigrationKey.unchanged)) unchanged

                """)
        }
        return CommandStatus.success
    }

    /// A report's outcome; nil for a value this build does not know (printed as it came).
    private static func outcome(_ report: [String: DBusValue]) -> MigrationOutcome? {
        MigrationOutcome(rawValue: field(report, MigrationKey.outcome))
    }

    private static func field(_ dictionary: [String: DBusValue], _ key: String) -> String {
        dictionary[key]?.stringValue ?? ""
    }

    private static func number(_ dictionary: [String: DBusValue], _ key: String) -> Int64 {
        dictionary[key]?.integerValue ?? 0
    }

    private static func date(_ dictionary: [String: DBusValue], _ key: String) -> String {
        Date(timeIntervalSince1970: Double(number(dictionary, key))).formatted(.iso8601)
    }
}
