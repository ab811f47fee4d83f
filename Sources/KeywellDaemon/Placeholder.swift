// KeywellDaemon
