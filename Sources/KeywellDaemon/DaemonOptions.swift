import KeywellProtocol

/// `keywelld [--replace] [--verbose]`, `--version`, `--help`.
struct DaemonOptions {
    static let version = KeywellVersion.string

    var replace = false
    var verbose = false

    enum Parsed {
        case run(DaemonOptions)
        /// Print and exit 0.
        case info(String)
        /// Print to stderr and exit 2.
        case usageError(String)
    }

    static let usage = """
        Usage: keywelld [--verbose] [--replace]
        The Keywell login keychain service: runs in the foreground on the session bus
        (DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus) as org.keywell.Keychain and
        org.freedesktop.secrets (the Secret Service), and
        serves the PAM module on $XDG_RUNTIME_DIR/keywell/control.

          --verbose   log every call (debug level) on stderr
          --replace   take org.freedesktop.secrets from its current owner (e.g. gnome-keyring)
          --version   print the version
          --help      print this help

        """

    static func parse(_ arguments: [String]) -> Parsed {
        var options = DaemonOptions()
        for argument in arguments {
            switch argument {
            case "--replace": options.replace = true
            case "--verbose", "-v": options.verbose = true
            case "--version": return .info("keywelld \(version)\n")
            case "--help", "-h": return .info(usage)
            default: return .usageError("keywelld: unknown argument \(argument)\n\(usage)")
            }
        }
        return .run(options)
    }
}
