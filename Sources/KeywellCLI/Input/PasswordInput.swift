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
    static func read(prompt: String) -> SecretBytes? {
        readLine(prompt: prompt, hideInput: true)
    }

    /// A line typed with echo on (a keychain name), nil at end of input.
    static func readVisible(prompt: String) -> String? {
        guard let line = readLine(prompt: prompt, hideInput: false) else { return nil }
        return line.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    enum NewPasswordOutcome {
        case password(SecretBytes)
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
            if first.matches(second) { return .password(first) }
            onMismatch()
        }
        return .mismatch
    }

    private static func readLine(prompt: String, hideInput: Bool) -> SecretBytes? {
        let standardInput = FileDescriptor(rawValue: 0)
        if isatty(0) == 1 {
            if let terminal = try? FileDescriptor.open("/dev/tty", O_RDWR | O_NOCTTY) {
                return terminal.closeAfter { readFromTerminal(terminal, prompt: prompt, hideInput: hideInput) }
            }
            // No controlling terminal although fd 0 is one: read it directly.
            return readFromTerminal(standardInput, prompt: prompt, hideInput: hideInput)
        }
        StandardStreams.output.flush()
        let standardError = FileDescriptor(rawValue: 2)
        writeAll(standardError, Array(prompt.utf8))
        let line = readLineBytes(from: standardInput)
        // End the prompt's line, as the typed Return would have on a terminal.
        writeAll(standardError, [UInt8(ascii: "\n")])
        return line
    }

    private static func readFromTerminal(_ fd: FileDescriptor, prompt: String, hideInput: Bool) -> SecretBytes? {
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
    /// The line goes straight into locked memory, which doubles as it fills (the outgrown
    /// buffer is zeroed when freed): no ordinary array ever holds the password.
    private static func readLineBytes(from fd: FileDescriptor) -> SecretBytes? {
        var buffer = SecretBytes(count: 256)
        var length = 0
        var sawAnything = false
        while length < maximumLength {
            if length == buffer.count {
                let larger = SecretBytes(count: min(buffer.count * 2, maximumLength))
                larger.withUnsafeMutableBytes { target in buffer.withUnsafeBytes { target.copyMemory(from: $0) } }
                buffer = larger
            }
            // An end of input or a read error ends the line alike.
            let count = buffer.withUnsafeMutableBytes { line in
                (try? fd.read(into: UnsafeMutableRawBufferPointer(rebasing: line[length..<(length + 1)]))) ?? 0
            }
            if count == 0 { break }
            sawAnything = true
            if buffer.withUnsafeBytes({ $0[length] }) == UInt8(ascii: "\n") {
                buffer.withUnsafeMutableBytes { $0[length] = 0 }
                break
            }
            length += 1
        }
        guard sawAnything else { return nil }
        if length > 0, buffer.withUnsafeBytes({ $0[length - 1] }) == UInt8(ascii: "\r") { length -= 1 }
        return buffer.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<length])) }
    }

    /// A prompt that cannot be shown (a closed terminal or stderr) is no reason to stop: the read decides.
    private static func writeAll(_ fd: FileDescriptor, _ bytes: [UInt8]) {
        try? fd.writeAll(bytes)
    }
}
