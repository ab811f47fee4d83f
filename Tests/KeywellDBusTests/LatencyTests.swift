import Foundation
import KeywellDBus
import Testing

/// What this layer adds to a round trip: a Peer.Ping is answered by libdbus inside the server's
/// I/O thread; Echo goes through the worker pool and a handler. Every reply is checked (each call
/// echoes a value of its own, so a reply matched to the wrong call fails), and the median must
/// stay far below a tick of any poll loop (a call that waited for a timeout instead of a wake-up
/// would take tens of milliseconds); the figures are printed for people, not asserted.
@Suite("Latency", .serialized)
struct LatencyTests {
    @Test func pingVersusEchoRoundTrip() throws {
        let fixture = try ServiceFixture()
        let rounds = 2000
        func measure(_ body: (Int) throws -> Void) rethrows -> [Duration] {
            for index in 0..<200 { try body(-1 - index) }  // warm up
            return try (0..<rounds).map { index in
                let start = ContinuousClock.now
                try body(index)
                return ContinuousClock.now - start
            }
        }
        func percentile(_ samples: [Duration], _ fraction: Double) -> Double {
            let sorted = samples.sorted()
            return milliseconds(sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]) * 1000
        }
        var wrongReplies = 0
        let ping = try measure { _ in try fixture.client.ping(ServiceFixture.name) }
        let echo = try measure { index in
            let argument: [DBusValue] = [.string("hello \(index)")]
            if try fixture.call("Echo", argument) != argument { wrongReplies += 1 }
        }
        let dict = try measure { index in
            let argument: [DBusValue] = [.stringVariantDict(["class": .string("genp"), "svce": .string("s \(index)"),
                                                             "acct": .string("a"), "r_Data": .bool(true)])]
            if try fixture.call("Echo", argument) != argument { wrongReplies += 1 }
        }
        #expect(wrongReplies == 0, "Echo answered with another call's value or a changed one")
        // Microseconds. 50 ms is generous for a busy 2-core machine and still far below what a
        // round trip that waits out a poll timeout would show at the median.
        for (name, samples) in [("Peer.Ping", ping), ("Echo(s)", echo), ("Echo(a{sv})", dict)] {
            #expect(percentile(samples, 0.5) < 50_000, "\(name) p50 \(percentile(samples, 0.5)) µs")
        }
        print(String(format: "[keywell-dbus] round trip µs p50/p90/p99 over %d calls: Peer.Ping %.0f/%.0f/%.0f, Echo(s) %.0f/%.0f/%.0f, Echo(a{sv}) %.0f/%.0f/%.0f; Echo/Ping p50 ratio %.2f",
                     rounds, percentile(ping, 0.5), percentile(ping, 0.9), percentile(ping, 0.99),
                     percentile(echo, 0.5), percentile(echo, 0.9), percentile(echo, 0.99),
                     percentile(dict, 0.5), percentile(dict, 0.9), percentile(dict, 0.99),
                     percentile(echo, 0.5) / percentile(ping, 0.5)))
    }
}
