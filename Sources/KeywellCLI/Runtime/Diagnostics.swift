import KeywellProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The error lines `security` prints, and Keywell's hint lines after them.
///
/// The first line keeps `security`'s exact shape, `<progname>: <function> <keychain>: <message>`,
/// because scripts match it. Hints are for people: they are printed only when stderr is a
/// terminal and `-q` was not given, so a script sees exactly what `security` prints.
struct Diagnostics {
    let progname: String
    let quiet: Bool
    /// Whether hint lines are printed (stderr is a terminal, no `-q`).
    let hints: Bool

    init(progname: String, quiet: Bool, stderrIsTerminal: Bool = isatty(2) == 1) {
        self.progname = progname
        self.quiet = quiet
        hints = !quiet && stderrIsTerminal
    }

    /// For Keywell's own commands, which have no macOS output to match: hints wherever stderr
    /// goes (git shows a credential helper's stderr to its user), still not with `-q`.
    var hintingAnywhere: Diagnostics { Diagnostics(progname: progname, quiet: quiet, stderrIsTerminal: true) }

    /// `sec_error`: `<progname>: <message>`.
    func error(_ message: String) {
        StandardStreams.error.write("\(progname): \(message)\n")
    }

    /// `sec_perror`: `<progname>: <function>: <Apple's message for status>`.
    func perror(_ function: String, _ status: OSStatus) {
        error("\(function): \(SecStatus.message(for: status))")
    }

    /// A bare line on stderr (`Keychain "x" no-timeout`, `password has been deleted.`).
    func line(_ text: String) {
        StandardStreams.error.write(text + "\n")
    }

    func hint(_ text: String) {
        guard hints else { return }
        StandardStreams.error.write("\(progname): \(text)\n")
    }

    /// For a daemon error: its own explanation of a refused parameter (a keychain name that is
    /// not allowed, a folder that does not exist) or of a refused file (which one, and why: not
    /// a keychain file, or altered outside Keywell), else the usual advice for the status.
    func hint(for error: KeychainError, keychain: String?) {
        hint(for: error.status, detail: error.detail, keychain: keychain)
    }

    func hint(for status: OSStatus, detail: String?, keychain: String?) {
        if status == SecStatus.authFailed, detail == KeychainError.accessDeniedDetail {
            hint("access denied: the item's access list does not name this program, and the question was answered Deny "
                + "or could not be shown (keywelld's log says which)")
        } else if Self.explainedByTheDaemon.contains(status), let detail {
            hint(detail)
        } else {
            hint(for: status, keychain: keychain)
        }
    }

    private static let explainedByTheDaemon: Set<OSStatus> = [
        SecStatus.param, SecStatus.wrPerm, SecStatus.invalidKeychain, SecStatus.decode,
    ]

    /// What to do about the usual failures, naming the keychain when we know it.
    func hint(for status: OSStatus, keychain: String?) {
        let named = keychain.map { "keychain \"\($0)\"" } ?? "the keychain"
        switch status {
        case SecStatus.interactionNotAllowed:
            let argument = keychain.map { " " + ShellQuoting.quote($0) } ?? ""
            hint("\(named) is locked: run `\(progname) unlock-keychain\(argument)`")
        case SecStatus.noSuchKeychain:
            hint("\(named) does not exist: `\(progname) list-keychains` shows the search list, `\(progname) create-keychain` makes one")
        case SecStatus.noDefaultKeychain:
            hint("no default keychain: set one with `\(progname) default-keychain -s <keychain>`, or create the login keychain with `\(progname) create-keychain login`")
        case SecStatus.notAvailable:
            hint("cannot reach keywelld on the D-Bus session bus: is DBUS_SESSION_BUS_ADDRESS set and keywell installed (scripts/install.sh)?")
        default:
            break
        }
    }
}

enum ShellQuoting {
    /// The word as a shell would need it typed: bare when safe, else in single quotes.
    static func quote(_ word: String) -> String {
        let safe = !word.isEmpty && word.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-_./+:@".unicodeScalars.contains(scalar))
        }
        return safe ? word : "'" + word.replacing("'", with: "'\\''") + "'"
    }
}
