import FoundationEssentials
import KeywellDBus
import KeywellProtocol

/// `keywell doctor`: whether this user's setup is in place, as keywelld sees it, and what the
/// caller's application identity is (docs/access-control.md "keywell doctor"). Prints one line
/// per check; exits 0 when nothing is wrong, 1 naming the first problem.
enum DoctorCommand {
    static func run(_ context: CommandContext, _ invocation: Invocation) -> Int32 {
        let words = invocation.words.dropFirst()
        if words.contains("-h") || words.contains("--help") {
            context.output.write(help)
            return CommandStatus.success
        }
        guard words.isEmpty else {
            StandardStreams.error.write("usage: keywell doctor\n")
            return CommandStatus.usage
        }
        var report = DoctorReport(output: context.output)
        DoctorChecks.run(into: &report)
        context.output.flush()
        if let problem = report.firstProblem {
            StandardStreams.error.write("keywell doctor: \(problem)\n")
            return CommandStatus.failure
        }
        return CommandStatus.success
    }

    static let help = """
        Usage: keywell doctor

        Checks that Keywell is in place for this user and says what is not: the session bus,
        keywelld, who serves the Secret Service, the login keychain, whether each keychain of
        the search list enforces its items' access lists, whether keywelld can show an access
        question (without one every question is answered Deny), and the PAM profile. It also
        prints the identity keywelld gives this program (how access control names callers) and
        kernel.yama.ptrace_scope, which decides how far an exe: identity can be trusted.
        Lines start with ok, note (worth knowing, not wrong) or problem. Exits 0 when there is no
        problem, 1 with the first one repeated on standard error.

        """
}

/// The checks' lines, and the first problem among them.
struct DoctorReport {
    let output: OutputStream
    private(set) var firstProblem: String?

    mutating func ok(_ subject: String, _ text: String) { line("ok", subject, text) }
    mutating func note(_ subject: String, _ text: String) { line("note", subject, text) }

    mutating func problem(_ subject: String, _ text: String) {
        line("problem", subject, text)
        if firstProblem == nil { firstProblem = "\(subject): \(text)" }
    }

    private func line(_ kind: String, _ subject: String, _ text: String) {
        output.write(kind + String(repeating: " ", count: max(0, 8 - kind.count)) + subject + ": " + text + "\n")
    }
}
