/// The `keywell` program as a library, so that its executable stays a one-line `main` and the
/// fuzz target and tests can reach the parsers it is made of (docs/design.md, "Modules").
public enum KeywellCommandLine {
    /// Runs one invocation (`arguments[0]` is the program name, as in `CommandLine.arguments`),
    /// writes everything it prints, and returns the process's exit code: the low byte of the
    /// status `security`'s main returns (-25300 errSecItemNotFound → 44).
    public static func run(_ arguments: [String]) -> Int32 {
        let status = Program.run(arguments)
        StandardStreams.output.flush()
        return status & 0xFF
    }
}
