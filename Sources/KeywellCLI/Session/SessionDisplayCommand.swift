import FoundationEssentials
import KeywellNativeClient
import KeywellProtocol
import KeywellSystem

/// `keywell session-display`: plumbing the autostart entry runs in the desktop session. It tells
/// keywelld — started now through the bus if it is not running — this session's `DISPLAY`,
/// `WAYLAND_DISPLAY` and `XAUTHORITY`, so that a keywelld pam_keywell started before the desktop
/// shows its dialogs there, without a restart (docs/prompts.md, "A daemon started before the desktop").
enum SessionDisplayCommand {
    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let words = Array(invocation.words.dropFirst())
        if words.contains("-h") || words.contains("--help") {
            context.output.write(help)
            return CommandStatus.success
        }
        guard words.isEmpty else {
            StandardStreams.error.write("usage: keywell session-display\n")
            return CommandStatus.usage
        }
        let environment = ProcessInfo.processInfo.environment
        let display: SessionDisplay
        do {
            // Checked here too, so that a refusal names the variable before anything is sent.
            display = try SessionDisplay(checking: environment.filter { SessionDisplay.variables.contains($0.key) })
        } catch {
            StandardStreams.error.write("keywell session-display: \(error.description)\n")
            return CommandStatus.failure
        }
        do {
            try context.client.setSessionDisplay(display.environment)
        } catch {
            StandardStreams.error.write("keywell session-display: keywelld refused the display: \(error.message)\n")
            return error.status
        }
        return CommandStatus.success
    }

    static let help = """
        Usage: keywell session-display

        Tells keywelld the graphical session's DISPLAY, WAYLAND_DISPLAY and XAUTHORITY, taken from
        this command's environment; every later password prompt and access question is shown there,
        until the user's last login session closes. The autostart entry install.sh installs runs it
        when the desktop starts; a keywelld that pam_keywell started before the desktop needs it.
        Only those three are sent: DISPLAY as :N, :N.M, host:N or host:N.M; WAYLAND_DISPLAY a socket
        name or an absolute path; XAUTHORITY an absolute path to a file of this user. Anything else
        is refused and nothing is changed (docs/prompts.md).

        """
}
