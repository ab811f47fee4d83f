import Foundation
import KeywellDBus
import Testing

/// Prints (does not assert) what this layer adds to a round trip: a Peer.Ping is answered by
/// libdbus inside the server's I/O thread; Echo goes through the worker pool and a handler.
@Suite("Latency", .serialized)
struct LatencyTests {
    @Test func pingVersusEchoRoundTrip() throws {
        let fixture = try ServiceFixture()
        let rounds = 2000
        func measure(_ body: () throws -> Void) rethrows -> [Duration] {
            for _ in 0..<200 { try body() }  // warm up
            return try (0..<rounds).map { _ in
                let start = ContinuousClock.now
                try body()
                return ContinuousClock.now - start
            }
        }
        func percentile(_ samples: [Duration], _ fraction: Double) -> Double {
            let sorted = samples.sorted()
            return milliseconds(sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]) * 1000
        }
        let ping = try measure { try fixture.client.ping(ServiceFixture.name) }
        let echo = try measure { _ = try fixture.call("Echo", [.string("hello")]) }
        let dict = try measure {
            _ = try fixture.call("Echo", [.stringVariantDict(["class": .string("genp"), "svce": .string("s"), "acct": .string("a"),
                                                             "r_Data": .bool(true)])])
        }
        print(String(format: "[keywell-dbus] round trip µs p50/p90/p99 over %d calls: Peer.Ping %.0f/%.0f/%.0f, Echo(s) %.0f/%.0f/%.0f, Echo(a{sv}) %.0f/%.0f/%.0f; Echo/Ping p50 ratio %.2f",
                     rounds, percentile(ping, 0.5), percentile(ping, 0.9), percentile(ping, 0.99),
                     percentile(echo, 0.5), percentile(echo, 0.9), percentile(echo, 0.99),
                     percentile(dict, 0.5), percentile(dict, 0.9), percentile(dict, 0.99),
                     percentile(echo, 0.5) / percentile(ping, 0.5)))
    }
}
