import FoundationEssentials
import KeywellNativeClient
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

/// `keywell export --format gnome-keyring [-f] [-k keychain] FILE`: a keychain as a keyring file
/// gnome-keyring-daemon opens (docs/migration.md, "Switching from gnome-keyring / KWallet / KeePassXC"), for `export --format
/// gnome-keyring` (ExportCommand parses the words and asks for the password).
enum GnomeKeyringExportCommand {
    /// Writes `file` with `password` (asked for by the caller); `keychain` nil is the default keychain.
    static func export(_ context: CommandContext, keychain typed: String?, file: String, password: SecretBytes,
                       replace: Bool) -> Int32 {
        let target = file.hasPrefix("/") ? file : currentDirectory() + "/" + file
        do {
            let name = try context.keychainName(typed)
            let written = try context.client.exportGnomeKeyring(name, to: target, password: password, replace: replace)
            context.output.write("exported \(written.items) item\(written.items == 1 ? "" : "s") to \(file)\n")
            ThisDeviceOnlyReport.write(context, leftOut: written.thisDeviceOnly)
            return CommandStatus.success
        } catch {
            context.diagnostics.error("export \(typed ?? "<default>") to \(file): "
                                      + error.explanation)
            context.diagnostics.hint(for: error, keychain: typed)
            return error.status
        }
    }

    private static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
