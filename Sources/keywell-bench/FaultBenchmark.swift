import ArgumentParser
import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellSystem

/// `keywell-bench faults`: SIGKILL keywelld again and again in the middle of a write-heavy run.
/// D-Bus activation brings it back on the next call; acknowledged writes must all survive and the
/// keychain file must stay sound.
struct FaultBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "faults",
        abstract: "kill -9 keywelld at random points of a write-heavy run; checks acknowledged writes and file integrity."
    )

    @Option(help: "The keywelld to kill (default: the one next to this program).")
    var keywelld: String?

    @Option(help: "How many times to kill it.")
    var kills = 100

    @Option(help: "Concurrent writers.")
    var writers = 4

    func run() throws {
        let result = try FaultRun(daemonPath: try locateKeywelld(keywelld), kills: kills, writers: writers).run()
        print(result.summary)
        for text in result.firstErrors { print("  error: \(text)") }
        if !result.passed { throw ExitCode(1) }
    }
}

struct FaultResult {
    var kills: Int
    var restarts: Int
    var acknowledged: Int
    var unacknowledged: Int
    var lost: Int
    var errors: Int
    var integrity: String
    var servesAfter: Bool
    var wall: Duration
    var firstErrors: [String]

    var passed: Bool { lost == 0 && errors == 0 && integrity == "ok" && servesAfter }

    var summary: String {
        String(format: "faults: %d × SIGKILL in %.1f s, %d daemon starts by activation; acknowledged writes %d, lost %d; "
               + "unacknowledged (outcome unknown) %d; unexpected errors %d; integrity_check: %@; serves after the last kill: %@",
               kills, wall.seconds, restarts, acknowledged, lost, unacknowledged, errors, integrity, servesAfter ? "yes" : "no")
    }
}

struct FaultRun {
    static let keychain = "faults"
    static let password = Array("faults password".utf8)
    let daemonPath: String
    let kills: Int
    let writers: Int

    func run() throws -> FaultResult {
        let world = try ActivatedDaemonWorld(daemonPath: daemonPath)
        let setup = try world.connect()
        defer { setup.close() }
        _ = try NativeCalls.call(setup, .createKeychain, [.string(Self.keychain), .bytes(Self.password)])

        let ledger = AcknowledgedLedger()
        let stop = StopFlag()
        let unknown = Counter()
        let start = ContinuousClock.now
        let group = DispatchGroup()
        for writer in 0..<writers {
            let connection = try world.connect()
            group.enter()
            startDetachedThread(name: "bench-writer", stackSize: 8 << 20) {
                defer { group.leave() }
                defer { connection.close() }
                Self.write(writer, on: connection, ledger: ledger, unknown: unknown, until: stop)
            }
        }
        let starts = try killRepeatedly(world)
        stop.set()
        group.wait()
        let wall = ContinuousClock.now - start
        let errors = ledger.errorCount

        // The next call starts a fresh daemon; it must serve, unlock, and hold every acknowledged write.
        let verifier = try world.connect()
        defer { verifier.close() }
        var serves = true
        do {
            _ = try NativeCalls.call(verifier, .unlock, [.string(Self.keychain), .bytes(Self.password)])
        } catch {
            serves = false
            ledger.error("after the last kill: \(error)")
        }
        let lost = serves ? try LoadRun.verify(ledger, on: verifier, keychain: Self.keychain) : ledger.entries.count
        let integrity = world.integrityCheck(Self.keychain)
        return FaultResult(kills: kills, restarts: starts, acknowledged: ledger.entries.count, unacknowledged: unknown.value,
                           lost: lost, errors: errors, integrity: integrity, servesAfter: serves, wall: wall,
                           firstErrors: ledger.firstErrors)
    }

    /// Waits for a daemon, lets it work 10–200 ms, SIGKILLs it; `kills` times. Returns how many
    /// distinct daemons it saw (each one an activation).
    private func killRepeatedly(_ world: ActivatedDaemonWorld) throws -> Int {
        let watcher = try world.connect()
        defer { watcher.close() }
        var seen = Set<pid_t>()
        var previous: pid_t = 0
        for _ in 0..<kills {
            let deadline = ContinuousClock.now + .seconds(20)
            var pid: pid_t = 0
            // The writers' calls restart it; wait for a daemon we have not killed yet.
            while true {
                if try watcher.nameHasOwner(KeywellNames.busName),
                   let owner = try? pid_t(watcher.unixProcessID(of: KeywellNames.busName)), owner != previous {
                    pid = owner
                    break
                }
                guard ContinuousClock.now < deadline else { throw BenchmarkFailure("keywelld did not come back within 20 s") }
                usleep(2000)
            }
            seen.insert(pid)
            usleep(UInt32.random(in: 10_000...200_000))
            kill(pid, SIGKILL)
            previous = pid
        }
        return seen.count
    }

    /// Adds new items until told to stop. A call the daemon answered is acknowledged; one that
    /// died with the daemon is forgotten (it may or may not have landed). After a restart the
    /// keychain is locked again, so the writer unlocks it and carries on.
    private static func write(_ writer: Int, on connection: DBusConnection, ledger: AcknowledgedLedger, unknown: Counter,
                              until stop: StopFlag) {
        var made = 0
        while !stop.isSet {
            made += 1
            let account = "fault-\(writer)-\(made)"
            let key = AcknowledgedLedger.Key(face: .native, name: account)
            let secret = Array("secret \(account)".utf8)
            var attempts = 0
            while !stop.isSet {
                attempts += 1
                do {
                    _ = try NativeCalls.call(connection, .add, [.stringVariantDict(
                        NativeLoadClient.itemKey(account, keychain).merging([WireKey.valueData: .bytes(secret)]) { $1 })])
                    ledger.acknowledge(key, secret: secret)
                    break
                } catch let error as DBusError where error.name.hasSuffix(".InteractionNotAllowed") && attempts < 50 {
                    // Refused before writing: unlock the restarted daemon and try the same item again.
                    _ = try? NativeCalls.call(connection, .unlock, [.string(keychain), .bytes(password)])
                } catch let error as DBusError where isDaemonGone(error) {
                    unknown.increment()
                    break
                } catch {
                    ledger.error("\(account): \(error)")
                    break
                }
            }
        }
    }

    /// The answers a call gets when the daemon died under it or is being restarted.
    static func isDaemonGone(_ error: DBusError) -> Bool {
        error.isTimeout || [DBusError.Name.serviceUnknown, DBusError.Name.nameHasNoOwner, DBusError.Name.disconnected,
                            "org.freedesktop.DBus.Error.Spawn.ChildExited", "org.freedesktop.DBus.Error.Spawn.ChildSignaled",
                            DBusError.Name.unknownObject, DBusError.Name.unknownMethod].contains(error.name)
            || error.name.hasSuffix(".NotAvailable")
    }
}

final class StopFlag: Sendable {
    private let stopped = Protected(false)
    func set() { stopped.withLock { $0 = true } }
    var isSet: Bool { stopped.withLock { $0 } }
}

final class Counter: Sendable {
    private let count = Protected(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
