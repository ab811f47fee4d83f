import KeywellCLI

#if canImport(Glibc)
import Glibc
#endif

exit(KeywellCommandLine.run(CommandLine.arguments))
