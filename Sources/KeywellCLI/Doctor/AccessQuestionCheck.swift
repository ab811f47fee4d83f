import FoundationEssentials
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

    /// The program keywelld would show an access question with, chosen as keywelld chooses it
    /// (docs/prompts.md): from keywelld's own environment (its `/proc/<pid>/environ`) and the
    /// session's activation environment.
    static func prompter(on bus: DBusConnection, daemon: String, into report: inout DoctorReport) {
        let subject = "access questions"
        guard let pid = try? bus.unixProcessID(of: daemon), let environment = processEnvironment(of: pid) else {
            report.note(subject, "cannot read keywelld's environment to tell which program would show them")
            return
        }
        let choice = PrompterChoice(environment: environment, activationEnvironment: { bus.activationEnvironment() },
                                    systemPrompter: { bus.ownedOrActivatable(GcrPrompterNames.busName) })
        switch choice.choose() {
        case .systemPrompter:
            report.ok(subject, "shown by GNOME's dialog (gcr's system prompter, \(GcrPrompterNames.busName)), with Always Allow as its check box")
        case .pinentry(let program, _, _):
            // KEYWELL_PINENTRY is taken as given: a name that runs nothing is answered Deny too.
            guard let found = PrompterChoice.locate(program, in: environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin") else {
                report.note(subject, "\(PrompterChoice.pinentryVariable)=\(program) in keywelld's environment is not a program "
                    + "it can run, so every one is answered Deny: programs not on an item's list never read it")
                return
            }
            report.ok(subject, "shown by \(found)")
        case .unavailable(let reason):
            report.note(subject, "none can be shown (\(reason)), so every one is answered Deny: programs not on an "
                + "item's list never read it. Install a graphical pinentry, or set \(PrompterChoice.terminalVariable) "
                + "or \(PrompterChoice.pinentryVariable) in keywelld's environment (docs/prompts.md)")
        }
    }

    /// `KEY=value` entries of a process of this user; nil when unreadable. A process's start
    /// environment is at most a few hundred KiB (the kernel's argument limit).
    static func processEnvironment(of pid: UInt32) -> [String: String]? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return nil }
        let entries = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        return PrompterChoice.parse(assignments: entries)
    }

    private static func describe(_ error: DBusError) -> String {
        KeychainError(dbusErrorName: error.name, message: error.message)?.description ?? error.message
    }
}
