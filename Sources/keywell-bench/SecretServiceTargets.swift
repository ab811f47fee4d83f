import Foundation

/// The targets `keywell-bench secrets` holds keywelld to (docs/benchmarks.md, "Secret Service"):
/// reads at the speed of the bus with access lists judged, writes at the bus plus one durable
/// commit, a thousand secrets in one call far faster than gnome-keyring's in the same run, and
/// little CPU of keywelld's own per read.
struct SecretServiceTargets {
    /// SearchItems and GetSecret, each against the Pings alternated with its own calls.
    static let readOverPing = 1.3
    /// CreateItem against 1.5 Pings plus one durable commit.
    static let createPings = 1.5
    /// gnome-keyring's GetSecrets of 1,000 items over keywelld's, in the same run.
    static let batchOverGnome = 25.0
    /// keywelld's CPU per read over its CPU per Ping.
    static let readCPUOverPing = 2.0

    struct Line {
        let text: String
        let met: Bool
    }

    /// One line per target, for the smallest size keywelld was measured at. `gnome` nil: not
    /// measured in this run (`gnomeSkipped`: on purpose, `--gnome-keyring none`).
    static func lines(keywelld: ServiceUnderTest.Measurement, gnome: ServiceUnderTest.Measurement?, gnomeSkipped: Bool) -> [Line] {
        var lines: [Line] = []
        func row(_ prefix: String) -> (index: Int, samples: LatencySamples, floor: Duration)? {
            guard let index = keywelld.rows.firstIndex(where: { $0.operation.hasPrefix(prefix) }) else { return nil }
            return (index, keywelld.rows[index].samples, keywelld.rows[index].floor)
        }
        for name in ["SearchItems", "GetSecret (DH)"] {
            guard let (_, samples, floor) = row(name) else { continue }
            let ratio = samples.percentile(0.5).seconds / max(floor.seconds, 1e-9)
            lines.append(Line(text: "\(SecretServiceReport.shortName(name)) p50 / Ping alternated with it: "
                                  + String(format: "%.2f (target ≤ %.1f)", ratio, readOverPing), met: ratio <= readOverPing))
        }
        if let (_, samples, floor) = row("CreateItem") {
            let ping = floor - keywelld.commit
            let limit = ping * createPings + keywelld.commit
            let p50 = samples.percentile(0.5)
            lines.append(Line(text: "CreateItem p50 \(SecretServiceReport.latency(p50)) against 1.5 Pings + a commit = "
                                  + "\(SecretServiceReport.latency(limit)): " + String(format: "%.2f of it (target ≤ 1)", p50.seconds / max(limit.seconds, 1e-9)),
                              met: p50 <= limit))
        }
        if let (index, samples, _) = row("GetSecrets, 1,000") {
            if let gnome, index < gnome.rows.count {
                let ratio = gnome.rows[index].samples.percentile(0.5).seconds / max(samples.percentile(0.5).seconds, 1e-9)
                lines.append(Line(text: String(format: "GetSecrets of 1,000: gnome-keyring / keywelld in this run: %.1f× (target ≥ %.0f×)",
                                               ratio, batchOverGnome), met: ratio >= batchOverGnome))
            } else {
                lines.append(Line(text: "GetSecrets of 1,000 against gnome-keyring: not measured in this run"
                                  + (gnomeSkipped ? " (--gnome-keyring none)" : " (a target not checked counts as missed)"),
                                  met: gnomeSkipped))
            }
        }
        if let pingCPU = keywelld.pingCPU, pingCPU > .zero {
            for name in ["SearchItems", "GetSecret (DH)"] {
                // A row's CPU is already its call's alone: each round's Ping is taken off it.
                guard let (index, _, _) = row(name), let callCPU = keywelld.rowCPU[index] else { continue }
                let ratio = callCPU.seconds / pingCPU.seconds
                lines.append(Line(text: "keywelld CPU per \(SecretServiceReport.shortName(name)) / per Ping: "
                                  + String(format: "%.2f (target ≤ %.1f)", ratio, readCPUOverPing), met: ratio <= readCPUOverPing))
            }
        } else {
            lines.append(Line(text: "keywelld CPU per call: not readable here", met: false))
        }
        return lines
    }
}
