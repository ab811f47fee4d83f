#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which password dialog a prompt shows, decided afresh for each prompt (docs/prompts.md):
/// 1. `KEYWELL_PINENTRY` (a path or a name on PATH), always, display or not;
/// 2. when the caller can speak to it (`systemPrompter` given), with a display and gcr's system
///    prompter on the session bus (running, or activatable and not relying on a display only
///    keywelld learned): GNOME's own dialog, its choice check box offering Always Allow in
///    access questions;
/// 3. with a display (`DISPLAY` or `WAYLAND_DISPLAY` in the daemon's environment, else the one
///    the session told keywelld (`SessionDisplay`), else in the session's activation environment)
///    the first graphical pinentry on PATH: pinentry-gnome3
///    (which shows gcr's system prompter, gnome-keyring's own dialog, under GNOME), then the Qt,
///    GTK, FLTK and X11 ones;
/// 4. with `KEYWELL_PINENTRY_TTY` naming a terminal, pinentry-curses or pinentry-tty on it;
/// 5. else none: the prompt cannot be shown, and the caller is told why.
/// keywelld decides with it for every prompt and access question; `keywell doctor` with the
/// daemon's environment, to say whether one can be shown.
public struct PrompterChoice: Sendable {
    public enum Outcome: Equatable, Sendable {
        /// Run `program` with `arguments`; `environment` goes over the daemon's own.
        case pinentry(program: String, arguments: [String], environment: [String: String])
        /// Speak to gcr's system prompter (`GcrPrompterNames.busName`) on the session bus; it
        /// finds the display itself, in the bus's activation environment.
        case systemPrompter
        /// No dialog can be shown; the reason, in words for the person and the log.
        case unavailable(String)
    }

    /// Debian's, Fedora's and Arch's names; pinentry-x11 is Debian's link to the graphical one.
    static let graphicalPinentries = ["pinentry-gnome3", "pinentry-qt", "pinentry-qt5", "pinentry-gtk", "pinentry-gtk-2",
                                      "pinentry-fltk", "pinentry-x11"]
    static let terminalPinentries = ["pinentry-curses", "pinentry-tty"]
    /// What a graphical pinentry needs to find the display and its session (the gcr prompter).
    static let displayVariables = ["DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS"]
    public static let pinentryVariable = "KEYWELL_PINENTRY"
    public static let terminalVariable = "KEYWELL_PINENTRY_TTY"

    /// The daemon's environment (read at start).
    let environment: [String: String]
    /// The display the session told the daemon (`LearnedSessionDisplay`), asked for only when
    /// the daemon's own environment has none (a daemon pam_keywell started before the desktop).
    let sessionDisplay: @Sendable () -> [String: String]
    /// The session's activation environment, asked for only when neither of the above names a
    /// display (a daemon started by D-Bus activation before the desktop exported `DISPLAY`).
    let activationEnvironment: @Sendable () -> [String: String]
    /// Whether gcr's system prompter is on the session bus; nil for a prompt that only pinentry
    /// can show.
    let systemPrompter: (@Sendable () -> SystemPrompter)?

    /// gcr's system prompter on the session bus.
    public enum SystemPrompter: Sendable {
        case absent
        /// Its name has an owner: it has found its display already.
        case running
        /// The bus can start it: it then finds the display in the bus's activation environment.
        case activatable
    }

    public init(environment: [String: String], sessionDisplay: @escaping @Sendable () -> [String: String] = { [:] },
                activationEnvironment: @escaping @Sendable () -> [String: String] = { [:] },
                systemPrompter: (@Sendable () -> SystemPrompter)? = nil) {
        self.environment = environment
        self.sessionDisplay = sessionDisplay
        self.activationEnvironment = activationEnvironment
        self.systemPrompter = systemPrompter
    }

    /// The dialog to show; `systemPrompter: false` skips gcr's (it failed to start just now).
    public func choose(systemPrompter allowed: Bool = true) -> Outcome {
        if let chosen = environment[Self.pinentryVariable], !chosen.isEmpty {
            return .pinentry(program: chosen, arguments: [], environment: [:])
        }
        let own = Self.displaySettings(environment)
        // The daemon's own display needs nothing passed on; one the session told it, or one from
        // the activation environment, does.
        var display: [String: String] = [:]
        if own.isEmpty { display = Self.displaySettings(sessionDisplay()) }
        let learned = !display.isEmpty
        if own.isEmpty, display.isEmpty { display = Self.displaySettings(activationEnvironment()) }
        let hasDisplay = !own.isEmpty || !display.isEmpty
        if hasDisplay, allowed, let systemPrompter {
            switch systemPrompter() {
            case .running:
                return .systemPrompter
            case .activatable:
                // A display only keywelld learned is not the bus's: a prompter the bus starts
                // would find none, so it is tried only when the activation environment has one.
                if !learned || !Self.displaySettings(activationEnvironment()).isEmpty { return .systemPrompter }
            case .absent:
                break
            }
        }
        let search = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        if hasDisplay {
            if let program = Self.graphicalPinentries.lazy.compactMap({ Self.locate($0, in: search) }).first {
                return .pinentry(program: program, arguments: [], environment: display)
            }
        }
        if let terminal = environment[Self.terminalVariable], !terminal.isEmpty {
            guard Self.isTerminal(terminal) else {
                return .unavailable("\(Self.terminalVariable)=\(terminal) is not a terminal")
            }
            if let program = Self.terminalPinentries.lazy.compactMap({ Self.locate($0, in: search) }).first {
                return .pinentry(program: program, arguments: ["--ttyname", terminal],
                                 environment: ["TERM": environment["TERM"] ?? "xterm"])
            }
            return .unavailable("no pinentry-curses or pinentry-tty is installed for \(Self.terminalVariable)")
        }
        if hasDisplay {
            return .unavailable("there is a display but no graphical pinentry (\(Self.graphicalPinentries.joined(separator: ", "))) is installed")
        }
        return .unavailable("there is no display (no DISPLAY or WAYLAND_DISPLAY) and no terminal configured (\(Self.terminalVariable))")
    }

    /// The display variables an environment sets; empty when it names no display.
    static func displaySettings(_ environment: [String: String]) -> [String: String] {
        guard ["DISPLAY", "WAYLAND_DISPLAY"].contains(where: { !(environment[$0] ?? "").isEmpty }) else { return [:] }
        return environment.filter { displayVariables.contains($0.key) && !$0.value.isEmpty }
    }

    /// A chosen program as the path that would run: `KEYWELL_PINENTRY` may name one that is not
    /// there; nil then.
    public func resolve(_ program: String) -> String? {
        Self.locate(program, in: environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin")
    }

    /// `name` as an executable path: itself when it holds a slash, else the first on `search`.
    public static func locate(_ name: String, in search: String) -> String? {
        if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
        for folder in search.split(separator: ":") where !folder.isEmpty {
            let candidate = "\(folder)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    private static func isTerminal(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR
    }

    /// `KEY=value` lines (systemd's `Environment` property, D-Bus's activation environment) as a dictionary.
    public static func parse(assignments: [String]) -> [String: String] {
        var result: [String: String] = [:]
        for line in assignments {
            guard let equals = line.firstIndex(of: "=") else { continue }
            result[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return result
    }
}
