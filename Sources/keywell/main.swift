#if canImport(Glibc)
import Glibc
#endif
import KeywellCLI

exit(KeywellCommandLine.run(CommandLine.arguments))
