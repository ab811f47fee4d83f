import KeywellDBus
import KeywellProtocol

/// `keywell migrate --from-secret-service` (docs/migration.md, "From any running Secret Service").
enum SecretServiceMigrateCommand {
    static func run(_ context: CommandContext) -> Int32 {
        do throws(MigrationError) {
            let (source, target) = try endpoints()
            say(context, "copying from \(source.description) into keywelld")
            let outcome = try SecretServiceMigration(source: source, target: target) { say(context, $0) }.run()
            say(context, "\(outcome.collections) collection(s): \(SecretServiceMigration.describe(outcome.counts))")
            for skipped in outcome.skippedCollections { context.diagnostics.error("left behind: \(skipped)") }
            return outcome.skippedCollections.isEmpty && outcome.counts.failed == 0 ? CommandStatus.success : 1
        } catch {
            context.diagnostics.error("migrate: \(error.message)")
            return 1
        }
    }

    private static func say(_ context: CommandContext, _ text: String) {
        context.output.write("migrate: \(text)\n")
        context.output.flush()
    }

    /// The owner of `org.freedesktop.secrets` and keywelld (started if needed), by unique name.
    private static func endpoints() throws(MigrationError) -> (source: SecretServiceClient, target: SecretServiceClient) {
        let connection = try dbus { () throws(DBusError) in try DBusConnection.sessionBus() }
        _ = try dbus { () throws(DBusError) in try connection.startService(KeywellNames.busName) }
        guard let keywelld = try dbus({ () throws(DBusError) in try connection.nameOwner(KeywellNames.busName) }) else {
            throw .refused("keywelld is not running and could not be started")
        }
        guard let owner = try dbus({ () throws(DBusError) in try connection.nameOwner(SecretServiceProtocol.busName) }) else {
            throw .refused("nothing owns \(SecretServiceProtocol.busName): start the Secret Service to copy from "
                           + "(gnome-keyring-daemon --start --components=secrets, KeePassXC, …) and run this again")
        }
        guard owner != keywelld else {
            // gnome-keyring's --replace only replaces another gnome-keyring, so the other service
            // must start while keywelld is not running; keywelld then queues behind it.
            throw .refused("keywelld itself owns \(SecretServiceProtocol.busName): there is no other Secret Service to copy from. "
                           + "Stop keywelld (systemctl --user stop keywelld, or end its process), start the other service "
                           + "(gnome-keyring-daemon --start --components=secrets), and run this again: keywelld starts "
                           + "without the name and takes it when the other service stops")
        }
        return (SecretServiceClient(connection: connection, destination: owner),
                SecretServiceClient(connection: connection, destination: keywelld))
    }
}
