import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// Runs one kind of call from several clients at once, each on its own connection and thread.
struct DaemonLoad {
    struct Result {
        var latencies: LatencySamples
        /// All clients' calls over the wall-clock time they took together.
        var totalRate: Double
        /// The most calls that were in flight at once.
        var peakInFlight: Int
    }

    let clients: [DBusConnection]

    /// `call(client, n)` makes the n-th call of client `client` (0-based).
    func run(clientCount: Int, callsPerClient: Int, warmUp: Int = 50,
             _ call: @escaping @Sendable (DBusConnection, Int, Int) throws -> Void) throws -> Result {
        let connections = Array(clients.prefix(clientCount))
        // Warm-up on every connection (caches, worker threads), with call numbers of its own.
        for (index, connection) in connections.enumerated() {
            for n in 0..<warmUp { try call(connection, index, callsPerClient + n) }
        }
        let collected = LatencyCollector(count: clientCount)
        let inFlight = InFlightCount()
        let start = ContinuousClock.now
        ClientThreads.run(count: clientCount) { index in
            var samples: [Duration] = []
            samples.reserveCapacity(callsPerClient)
            for n in 0..<callsPerClient {
                let begin = ContinuousClock.now
                inFlight.enter()
                defer { inFlight.leave() }
                do {
                    try call(connections[index], index, n)
                } catch {
                    collected.fail("\(error)")
                    return
                }
                samples.append(ContinuousClock.now - begin)
            }
            collected.store(samples, at: index)
        }
        let wall = ContinuousClock.now - start
        if let failure = collected.failure { throw BenchmarkFailure(failure) }
        let all = collected.all
        return Result(latencies: LatencySamples(all), totalRate: Double(all.count) / wall.seconds, peakInFlight: inFlight.peak)
    }
}

/// How many calls are in flight, and the most there were at once.
private final class InFlightCount: Sendable {
    private let counts = Protected((now: 0, peak: 0))

    func enter() { counts.withLock { $0.now += 1; $0.peak = max($0.peak, $0.now) } }
    func leave() { counts.withLock { $0.now -= 1 } }
    var peak: Int { counts.withLock { $0.peak } }
}

private final class LatencyCollector: Sendable {
    private struct State {
        var perClient: [[Duration]]
        var failure: String?
    }
    private let state: Protected<State>

    init(count: Int) { state = Protected(State(perClient: Array(repeating: [], count: count))) }

    var failure: String? { state.withLock { $0.failure } }
    func store(_ samples: [Duration], at index: Int) { state.withLock { $0.perClient[index] = samples } }
    func fail(_ message: String) { state.withLock { $0.failure = $0.failure ?? message } }
    var all: [Duration] { state.withLock { $0.perClient.flatMap { $0 } } }
}

/// The native API's calls, as the benchmark makes them.
enum NativeCalls {
    static func call(_ connection: DBusConnection, _ method: NativeMethod, _ arguments: [DBusValue]) throws -> [DBusValue] {
        try connection.call(destination: KeywellNames.busName, path: KeywellNames.objectPath, interface: KeywellNames.interface,
                            member: method.name, arguments: arguments)
    }

    static func account(_ index: Int) -> String { "user\(index)@example.com" }
    static func service(_ index: Int) -> String { "service-\(index % 100)" }

    /// The attributes of filler item `index` (engine form, for the in-process batch).
    static func fillerItem(_ index: Int) -> WireDictionary {
        [
            WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: .string(account(index)),
            AttributeKey.service: .string(service(index)), AttributeKey.label: .string("Label \(index % 50)"),
            WireKey.valueData: .data(Data("password-\(index)-0123456789abcdef".utf8)),
            WireKey.useKeychain: .string("bench"),
        ]
    }

    static func primaryKey(_ account: String, _ service: String) -> [String: DBusValue] {
        [WireKey.class: .string(WireKey.classGenericPassword), AttributeKey.account: .string(account), AttributeKey.service: .string(service)]
    }
}
