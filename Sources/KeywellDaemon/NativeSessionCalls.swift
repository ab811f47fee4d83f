import KeywellCore
import KeywellDBus
import KeywellProtocol
import KeywellSecretService
import KeywellSystem
import Logging

/// The native call about the user's graphical session (docs/prompts.md, "A daemon started
/// before the desktop"): `SetSessionDisplay` from the autostart entry's `keywell
/// session-display`. It changes shared state, so a sandboxed or unidentified caller never gets
/// here (`CallReach`). Whether a dialog can be shown with what it learned is `GetAccessStatus`.
struct NativeSessionCalls: Sendable {
    let display: LearnedSessionDisplay
    let logger: Logger

    /// The three variables are at most `SessionDisplay.variables.count` entries; anything else
    /// is refused whole, and what was learned before stays.
    func setSessionDisplay(_ argument: DBusValue) throws(KeychainError) {
        // The signature (a{ss}) was checked before the call got here.
        let count = argument.dictionaryEntries?.count ?? 0
        guard count <= SessionDisplay.variables.count, let environment = argument.asStringStringDict() else {
            throw .param("SetSessionDisplay takes at most \(SessionDisplay.variables.count) variables "
                + "(\(SessionDisplay.variables.joined(separator: ", "))), got \(count)")
        }
        let checked: SessionDisplay
        do {
            checked = try SessionDisplay(checking: environment)
        } catch {
            throw .param(error.description)
        }
        display.learn(checked)
        let names = checked.environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        logger.info("learned the session's display: \(names); later dialogs are shown there")
    }
}
