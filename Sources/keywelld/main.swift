#if canImport(Glibc)
import Glibc
#endif
import KeywellDaemon

exit(DaemonMain.run(arguments: CommandLine.arguments))
