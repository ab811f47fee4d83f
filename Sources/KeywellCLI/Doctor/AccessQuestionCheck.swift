import KeywellDBus
import KeywellProtocol
import KeywellSystem

#if canImport(Glibc)
import Glibc
#endif

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

    /// Whether keywelld can show an access question now, as keywelld itself says over D-Bus
    /// (`GetAccessStatus`): the choice it makes for every question, from its own environment,
    /// the display the desktop session told it, the session's activation environment and the
    /// bus (gcr's prompter), as the next question would find them (docs/prompts.md).
    static func prompter(on bus: DBusConnection, into report: inout DoctorReport) -> [[String: DBusValue]] {
        let subject = "access questions"
        let reply: [DBusValue]
        do {
            reply = try DoctorChecks.nativeCall(bus, .getAccessStatus)
        } catch {
            report.note(subject, "keywelld does not say whether it can show one (\(describe(error)))")
            return []
        }
        let status = reply.first?.asStringVariantDict() ?? [:]
        if status[AccessStatusKey.canAsk]?.boolValue == true {
            report.ok(subject, "shown by \(status[AccessStatusKey.dialog]?.stringValue ?? "?")")
        } else {
            let reason = status[AccessStatusKey.reason]?.stringValue ?? "keywelld gave no reason"
            report.note(subject, "none can be shown (\(reason)), so every one is answered Deny: programs not on an item's "
                + "list never read it. Install a graphical pinentry (or gcr, for GNOME's dialog), run `keywell "
                + "session-display` in the desktop session, or set \(PrompterChoice.terminalVariable) or "
                + "\(PrompterChoice.pinentryVariable) in keywelld's environment (docs/prompts.md)")
        }
        return reply.count > 1 ? reply[1].asStringVariantDictArray() ?? [] : []
    }

    /// Grants listed one a line, at most this many: the rest are counted.
    static let maximumGrantsShown = 32

    /// The grants Always Allow made (newest first), each with whether the item's list still
    /// names the program: what macOS's Keychain Access shows in an item's Access Control tab.
    static func grants(_ grants: [[String: DBusValue]], into report: inout DoctorReport) {
        let subject = "Always Allow"
        let holding = grants.filter { $0[AccessGrantKey.holds]?.boolValue == true }.count
        guard !grants.isEmpty else {
            report.ok(subject, "no program was granted an item by Always Allow")
            return
        }
        report.ok(subject, "\(grants.count) item grant\(grants.count == 1 ? "" : "s") recorded, \(holding) still on the items' lists "
            + "(`keywell access list --identity ID` shows them, `keywell access remove` takes one back)")
        for grant in grants.prefix(maximumGrantsShown) {
            let identity = grant[AccessGrantKey.identity]?.stringValue ?? "?"
            let label = grant[AccessGrantKey.label]?.stringValue ?? ""
            let keychain = grant[AccessGrantKey.keychain]?.stringValue ?? ""
            let when = (grant[AccessGrantKey.time]?.integerValue).map(utcTime) ?? "?"
            let text = "\(identity) may use “\(label)” in \(keychain), granted \(when)"
            if grant[AccessGrantKey.holds]?.boolValue == true {
                report.ok(subject, text)
            } else {
                report.note(subject, text + "; no longer on the item's list (removed, or the item is gone)")
            }
        }
        if grants.count > maximumGrantsShown {
            report.note(subject, "\(grants.count - maximumGrantsShown) older grants not listed")
        }
    }

    /// `2026-11-29 11:52 UTC`.
    static func utcTime(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "\(seconds)" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour)):\(two(parts.tm_min)) UTC"
    }

    private static func describe(_ error: DBusError) -> String {
        KeychainError(dbusErrorName: error.name, message: error.message)?.description ?? error.message
    }
}
