import KeywellDaemon

#if canImport(Glibc)
import Glibc
#endif

exit(DaemonMain.run(arguments: CommandLine.arguments))
