import ArgumentParser
import Foundation
import KeywellDBus
import KeywellIdentity

/// `keywell-bench identity`: what naming a caller costs (docs/access-control.md "Cost"). The
/// first call of a connection asks the bus and reads /proc (and hashes a program not seen
/// before); every later call is the per-connection cache lookup, which must stay far below the
/// 10 µs access control may add to a trusted read.
struct IdentityBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identity",
        abstract: "Caller identities: first call of a connection, and the cached lookup every later call pays."
    )

    @Option(help: "Connections worked out for the first-call median (and held in the cache for the lookups).")
    var connections = 100

    @Option(help: "Cached lookups timed.")
    var lookups = 1_000_000

    /// What the access check may add to a trusted read (the access-control issue's target).
    static let targetNanoseconds = 10_000.0

    func run() throws {
        guard connections > 0, lookups > 0 else { throw ValidationError("--connections and --lookups must be positive") }
        // The daemon benchmark's private bus, without a keywelld: this program is the service.
        let world = try DaemonBenchmarkWorld()
        // Its deinit ends the bus: keep it past the last call (the defers below run first).
        defer { withExtendedLifetime(world) {} }
        let service = try world.connect()
        defer { service.close() }
        let callers = try (0..<connections).map { _ in try world.connect() }
        defer { callers.forEach { $0.close() } }
        let names = callers.map { $0.uniqueName! }

        // This program is the caller: a cold cache hashes its own executable once, unless only
        // root can replace it (then it is never hashed: docs/access-control.md).
        let identities = ApplicationIdentities(resolver: IdentityResolver(runtimeDirectory: world.runtime))
        let clock = ContinuousClock()
        let cold = try clock.measure { _ = try identities.identity(of: names[0], on: service) }
        var warm = LatencySamples()
        for name in names.dropFirst() {
            warm.append(try clock.measure { _ = try identities.identity(of: name, on: service) })
        }

        var found = 0
        let start = clock.now
        for index in 0..<lookups {
            if case .success = identities.cached(names[index % names.count], on: service) { found += 1 }
        }
        let perLookup = (clock.now - start).seconds * 1e9 / Double(lookups)
        guard found == lookups else { throw ValidationError("only \(found) of \(lookups) lookups found their caller") }

        var status = stat()
        let size = stat("/proc/self/exe", &status) == 0 ? Int(status.st_size) : 0
        print("Caller identities: \(ProcessInfo.processInfo.activeProcessorCount) cores, private dbus-daemon, this program as the caller")
        let hashing = identities.resolver.digests.filesHashed > 0 ? "program hashed now" : "program only root can replace, not hashed"
        print("first call (\(hashing), \(size >> 20) MiB):   \(formatMicroseconds(cold)) µs")
        if connections > 1 {
            print("first call of a new connection, program known: p50 / p99 \(warm.percentilesText) µs (\(connections - 1) connections)")
        }
        print(String(format: "every later call (cache lookup, %d callers cached):     %.0f ns per call (%d lookups)",
                     identities.count, perLookup, lookups))
        let met = perLookup <= Self.targetNanoseconds
        print("target: at most \(Int(Self.targetNanoseconds / 1000)) µs added to a trusted read: \(met ? "met" : "NOT met")")
        if !met { throw ExitCode(1) }
    }
}
