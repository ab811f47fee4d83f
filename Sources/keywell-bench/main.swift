import ArgumentParser

/// Keywell's benchmarks, one subcommand per part (`core`, later `daemon`, `cli`, `pam`…).
struct KeywellBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keywell-bench",
        abstract: "Benchmarks for Keywell's parts.",
        subcommands: [CoreBenchmark.self, CoreWriterHelper.self, DaemonBenchmark.self, CLIBenchmark.self,
                      LoadBenchmark.self, FaultBenchmark.self, ThrottleBenchmark.self, SecurityReport.self,
                      SecretServiceBenchmark.self, IdentityBenchmark.self, StartupBenchmark.self, KWalletBenchmark.self, SSHAgentBenchmark.self,
                      SyncBenchmark.self, QuestionBenchmark.self, LockBenchmark.self, MemoryWorkloadBenchmark.self]
    )
}

KeywellBench.main()
