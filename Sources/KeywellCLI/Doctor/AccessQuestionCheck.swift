import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// Whether access control can do its job for this user (docs/access-control.md "keywell doctor"):
/// which keychains of the search list enforce their items' access lists, and whether keywelld can
/// show an access question at all. Without a program to show it, every question is answered
/// Deny: a program not on an item's list then never reads it.
enum AccessQuestionCheck {
    /// The search list is the user's (a handful of keychains); more are not looked at.
    static let maximumKeychains = 64

    /// One line per keychain of the search list: enforced or not, with how to turn it on.
    static func enforcement(on bus: DBusConnection, into report: inout DoctorReport) {
        let names: [String]
        do {
            names = try DoctorChecks.nativeCall(bus, .getSearchList).first?.arrayElements?.compactMap(\.stringValue) ?? []
        } catch {
            report.problem("access lists", "cannot read the search list: \(describe(error))")
            return
        }
        if names.isEmpty { report.note("access lists", "the search list is empty: no keychain to check") }
        for name in names.prefix(maximumKeychains) {
            let subject = "access lists (\(name))"
            do {
                let info = try DoctorChecks.nativeCall(bus, .getInfo, [.string(name)]).first?.asStringVariantDict() ?? [:]
                if info[KeychainInfoKey.enforceAccess]?.boolValue == true {
                    report.ok(subject, "enforced: a program not on an item's list is asked before it reads the item")
                } else {
                    report.note(subject, "not enforced: its items are open to any program of yours (turn it on with "
                        + "`keywell set-keychain-settings --enforce-access on \(name)`)")
                }
            } catch {
                report.note(subject, "cannot be checked: \(describe(error))")
            }
        }
        if names.count > maximumKeychains {
            report.note("access lists", "\(names.count - maximumKeychains) more keychains in the search list not checked")
        }
    }

    /// Whether keywelld can show an access question now, as keywelld itself answers it
    /// (`GetPrompter`, docs/prompts.md): its own environment, the display the desktop session told
    /// it, and the session's activation environment, as the next question would find them.
    static func prompter(on bus: DBusConnection, into report: inout DoctorReport) {
        let subject = "access questions"
        let reply: [DBusValue]
        do {
            reply = try DoctorChecks.nativeCall(bus, .getPrompter)
        } catch {
            report.note(subject, "cannot ask keywelld which program would show them: \(describe(error))")
            return
        }
        let detail = reply.count > 1 ? reply[1].stringValue ?? "" : ""
        if reply.first?.boolValue == true {
            report.ok(subject, detail)
            return
        }
        report.note(subject, "none can be shown (\(detail)), so every one is answered Deny: programs not on an "
            + "item's list never read it. Install a graphical pinentry, run `keywell session-display` in the desktop "
            + "session, or set \(PrompterChoice.terminalVariable) or \(PrompterChoice.pinentryVariable) in keywelld's "
            + "environment (docs/prompts.md)")
    }

    private static func describe(_ error: DBusError) -> String {
        KeychainError(dbusErrorName: error.name, message: error.message)?.description ?? error.message
    }
}
