import Foundation

/// Every libFuzzer target in Fuzz/ for a bounded time, through scripts/fuzz.sh (which owns the
/// fuzz build and the corpus handling); one row per target from its `--summary` line.
struct FuzzingSection: SecurityReportSection {
    let title = "fuzzing"

    /// One line of `scripts/fuzz.sh --summary`.
    struct TargetSummary: Decodable {
        var target: String
        var seconds: Double
        var exit: Int
        var executions: Int
        var seeds: Int
        var corpus: Int
        var crashes: Int
    }

    func figures(_ context: SecurityCheckContext) throws -> [SecurityFigure] {
        let summaryFile = NSTemporaryDirectory() + "keywell-fuzz-summary-\(getpid()).jsonl"
        defer { try? FileManager.default.removeItem(atPath: summaryFile) }
        let status = try ReportChild.run("/bin/bash", ["\(context.repository)/scripts/fuzz.sh", "--seconds", "\(context.fuzzSeconds)",
                                                       "--summary", summaryFile])
        let text = (try? String(contentsOfFile: summaryFile, encoding: .utf8)) ?? ""
        let targets = text.split(separator: "\n").compactMap { try? JSONDecoder().decode(TargetSummary.self, from: Data($0.utf8)) }
        guard !targets.isEmpty else {
            return [SecurityFigure(check: "fuzzing (scripts/fuzz.sh)", figure: "did not run (exit \(status); see its output)",
                                   target: "runs", met: false)]
        }
        return targets.map { run in
            SecurityFigure(check: "fuzz `\(run.target)` for \(Int(run.seconds)) s (libFuzzer, ASan)",
                           figure: run.executions == 0 && run.exit != 0
                               ? "did not start: exit \(run.exit) before the first input (see .build-fuzz/\(run.target).log)"
                               : "\(run.executions) inputs run, corpus \(run.seeds) → \(run.corpus) inputs, \(run.crashes) crashes",
                           target: "0 crashes", met: run.crashes == 0 && run.exit == 0 && run.executions > 0)
        }
    }
}
