import KeywellSystem
#if canImport(Glibc)
import Glibc
#endif

/// Where passwords come from when no flag gave one: the terminal with echo off (`/dev/tty`,
/// like getpass(3)) when standard input is a terminal, else a line of standard input, so
/// `printf '%s\n' "$pw" | keywell unlock-keychain` works in scripts (as with secret-tool).
/// The prompt goes to the terminal, or to stderr when reading standard input, as macOS
/// getpass does; it never goes to stdout, which scripts capture.
enum PasswordInput {
    /// Longest line read; a password longer than this is cut, as getpass cuts at its buffer.
    static let maximumLength = 1 << 20

    /// One line with echo off; nil at end of input (the command then exits 255, as `security`).
    static func read(prompt: String) -> SecretArray? {
        readLine(prompt: prompt, hideInput: true)
    }

    /// A line typed with echo on (a keychain name), nil at end of input.
    static func readVisible(prompt: String) -> String? {
        guard let line = readLine(prompt: prompt, hideInput: false) else { return nil }
        return String(decoding: line.bytes, as: UTF8.self)
    }

    enum NewPasswordOutcome {
        case password(SecretArray)
        case endOfInput
        case mismatch
    }

    /// Asks twice until both agree, at most `attempts` times, printing `mismatchMessage` after
    /// each disagreement (create-keychain's `passwords don't match`).
    static func readNew(prompt: String, retypePrompt: String, attempts: Int,
                        onMismatch: () -> Void) -> NewPasswordOutcome {
        for _ in 0..<attempts {
            guard let first = read(prompt: prompt) else { return .endOfInput }
            guard let second = read(prompt: retypePrompt) else { return .endOfInput }
            if first == second { return .password(first) }
            onMismatch()
        }
        return .mismatch
    }

    private static func readLine(prompt: String, hideInput: Bool) -> SecretArray? {
        if isatty(0) == 1 {
            let terminal = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
            if terminal >= 0 {
                defer { close(terminal) }
                return readFromTerminal(terminal, prompt: prompt, hideInput: hideInput)
            }
            // No controlling terminal although fd 0 is one: read it directly.
            return readFromTerminal(0, prompt: prompt, hideInput: hideInput)
        }
        StandardStreams.output.flush()
        writeAll(2, Array(prompt.utf8))
        let line = readLineBytes(from: 0)
        // End the prompt's line, as the typed Return would have on a terminal.
        writeAll(2, [UInt8(ascii: "\n")])
        return line
    }

    private static func readFromTerminal(_ fd: Int32, prompt: String, hideInput: Bool) -> SecretArray? {
        StandardStreams.output.flush()
        guard hideInput else {
            writeAll(fd, Array(prompt.utf8))
            return readLineBytes(from: fd)
        }
        // Echo goes off before the prompt shows, so nothing typed after it can appear.
        let echo = TerminalEcho(fd: fd)
        echo.turnOff()
        writeAll(fd, Array(prompt.utf8))
        let line = readLineBytes(from: fd)
        echo.restore()
        // The Return the user typed was not echoed either.
        writeAll(fd, [UInt8(ascii: "\n")])
        return line
    }

    /// Reads one byte at a time so that nothing after the newline is consumed: the next prompt
    /// (the retyped password) must find its own line still unread.
    private static func readLineBytes(from fd: Int32) -> SecretArray? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        var sawAnything = false
        while line.count < maximumLength {
            let count = retryingOnInterrupt { Glibc.read(fd, &byte, 1) }
            if count <= 0 { break }
            sawAnything = true
            if byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        byte = 0
        guard sawAnything else { return nil }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        let secret = SecretArray(line)
        line.withUnsafeMutableBytes { SecretMemory.wipe($0) }
        return secret
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = retryingOnInterrupt { bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } }
            if written < 0 {
                return
            }
            offset += written
        }
    }
}
