import KeywellSystem
#if canImport(Glibc)
import Glibc
#endif

/// Turns a terminal's echo off while a password is typed, and makes sure it comes back on:
/// after the read, and also when Ctrl-C, a hangup or a kill signal ends the program mid-way.
/// TCSANOW, not TCSAFLUSH: a password typed ahead of the prompt must not be thrown away.
struct TerminalEcho {
    let fd: FileDescriptor

    func turnOff() {
        var settings = termios()
        guard tcgetattr(fd.rawValue, &settings) == 0 else { return }
        SavedTerminal.remember(fd: fd.rawValue, settings: settings)
        settings.c_lflag &= ~tcflag_t(ECHO | ECHOE | ECHOK | ECHONL)
        _ = tcsetattr(fd.rawValue, TCSANOW, &settings)
    }

    func restore() {
        SavedTerminal.restore()
    }
}

/// The settings to put back, reachable from a signal handler (which cannot capture context).
private enum SavedTerminal {
    /// A bare number: the signal handler reads it.
    nonisolated(unsafe) static var fd: Int32 = -1
    nonisolated(unsafe) static var settings = termios()
    // Not SIGTSTP: a stopped job keeps echo off, and the shell restores the terminal meanwhile.
    static let handledSignals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    static func remember(fd: Int32, settings: termios) {
        self.settings = settings
        self.fd = fd
        for signalNumber in handledSignals {
            signal(signalNumber) { received in
                SavedTerminal.restoreSettingsOnly()
                // Die (or stop) the way the signal meant, with echo back on.
                signal(received, SIG_DFL)
                raise(received)
            }
        }
    }

    static func restore() {
        restoreSettingsOnly()
        for signalNumber in handledSignals { signal(signalNumber, SIG_DFL) }
        fd = -1
    }

    static func restoreSettingsOnly() {
        guard fd >= 0 else { return }
        _ = tcsetattr(fd, TCSANOW, &settings)
    }
}
