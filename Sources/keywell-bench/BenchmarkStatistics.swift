import Foundation

/// Latency samples and the numbers a benchmark table shows.
struct LatencySamples {
    private(set) var durations: [Duration] = []

    mutating func append(_ duration: Duration) { durations.append(duration) }

    init(_ durations: [Duration] = []) { self.durations = durations }

    func percentile(_ fraction: Double) -> Duration {
        guard !durations.isEmpty else { return .zero }
        let sorted = durations.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.down)))
        return sorted[index]
    }

    /// Operations per second over the summed latencies.
    var operationsPerSecond: Double {
        let total = durations.reduce(Duration.zero, +)
        return total == .zero ? 0 : Double(durations.count) / total.seconds
    }

    /// "p50 / p99" in microseconds.
    var percentilesText: String {
        "\(formatMicroseconds(percentile(0.5))) / \(formatMicroseconds(percentile(0.99)))"
    }
}

extension Duration {
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}

func formatMicroseconds(_ duration: Duration) -> String {
    let microseconds = duration.seconds * 1e6
    return microseconds < 100 ? String(format: "%.1f", microseconds) : String(format: "%.0f", microseconds)
}

func formatRate(_ rate: Double) -> String {
    String(format: "%.0f", rate)
}

enum KeywellBenchTiming {
    /// How long `body` takes, once.
    static func measure(_ body: () throws -> Void) rethrows -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        try body()
        return clock.now - start
    }
}
