import KeywellDaemon

DaemonMain.run(arguments: CommandLine.arguments)
