#if canImport(Glibc)
import Glibc
#endif

// `security`'s main returns the command's status; the process exits with its low byte
// (-25300 errSecItemNotFound → 44).
let status = Program.run(CommandLine.arguments)
StandardStreams.output.flush()
exit(status & 0xFF)
