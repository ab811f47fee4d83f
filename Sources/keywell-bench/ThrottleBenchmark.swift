import ArgumentParser
import Foundation
import KeywellDBus
import KeywellProtocol

/// `keywell-bench throttle`: wrong passwords through `Unlock` are slowed down.
///
/// Two guessers: a patient one that waits the delay each answer names, ten times (the run must
/// take at least the sum of the delays, and a right password afterwards must work), and a
/// greedy one that calls as fast as it can for a while (it gets only a handful of real checks;
/// the rest are refused without looking at the password).
struct ThrottleBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "throttle",
        abstract: "Wrong-password throttling of Unlock: paced and full-speed guessers."
    )

    @Option(help: "The keywelld to drive (default: the one next to this program).")
    var keywelld: String?

    @Option(help: "First delay in ms for the paced guesser (the daemon's default is 1000).")
    var unitMs = 100

    @Option(help: "Seconds of full-speed guessing (at the daemon's default 1 s unit).")
    var greedySeconds = 10.0

    func run() throws {
        let path = try locateKeywelld(keywelld)
        let paced = try ThrottleRun.paced(daemonPath: path, unitMilliseconds: unitMs)
        print(paced.summary)
        let greedy = try ThrottleRun.greedy(daemonPath: path, seconds: greedySeconds)
        print(greedy.summary)
        if !paced.passed || !greedy.passed { throw ExitCode(1) }
    }
}

enum ThrottleRun {
    static let keychain = "guessme"
    static let password = Array("the right one".utf8)

    struct Paced {
        var attempts: Int
        var elapsed: Duration
        var minimum: Duration
        var unit: Duration
        var delaysNamed: [String]
        var scheduleKept: Bool
        var rightPasswordWorks: Bool
        var passed: Bool { elapsed >= minimum && scheduleKept && rightPasswordWorks }
        var summary: String {
            String(format: "throttle, paced guesser: %d wrong passwords took %.2f s (sum of delays %.2f s at a %.1f s unit); delays named: %@ (%@); right password afterwards: %@",
                   attempts, elapsed.seconds, minimum.seconds, unit.seconds, delaysNamed.joined(separator: ", "),
                   scheduleKept ? "the schedule" : "NOT the schedule", rightPasswordWorks ? "unlocks" : "FAILS")
        }
    }

    struct Greedy {
        var seconds: Double
        var calls: Int
        var checked: Int
        var unthrottledPerSecond: Double
        var lastDetail: String
        var passed: Bool { checked <= 8 }
        var summary: String {
            String(format: "throttle, full-speed guesser: %d calls in %.0f s, %d passwords actually checked (unthrottled: ~%.0f checks/s at this KDF cost); last answer: %@",
                   calls, seconds, checked, unthrottledPerSecond, lastDetail)
        }
    }

    /// Ten wrong passwords, each after waiting the delay the previous answer named.
    static func paced(daemonPath: String, unitMilliseconds: Int) throws -> Paced {
        let world = try ActivatedDaemonWorld(daemonPath: daemonPath,
                                             extraEnvironment: ["KEYWELL_TEST_THROTTLE_UNIT_MS": "\(unitMilliseconds)"])
        let connection = try world.connect()
        defer { connection.close() }
        try createLocked(connection)
        var named: [Duration] = []
        var wait = Duration.zero
        let start = ContinuousClock.now
        for attempt in 0..<10 {
            if wait > .zero { Thread.sleep(forTimeInterval: wait.seconds + 0.005) }
            let detail = wrongUnlock(connection, attempt)
            wait = delay(in: detail) ?? .zero
            if wait > .zero { named.append(wait) }
        }
        let elapsed = ContinuousClock.now - start
        Thread.sleep(forTimeInterval: wait.seconds + 0.005)
        let works = (try? NativeCalls.call(connection, .unlock, [.string(keychain), .bytes(password)])) != nil
        // A release keywelld has no test switches: its unit is the real 1 s whatever was asked,
        // so the unit in force is the first delay named, and it must be one of the two.
        let unit = named.first ?? .milliseconds(unitMilliseconds)
        let unitExpected = unit == .milliseconds(unitMilliseconds) || unit == .seconds(1)
        // The schedule: nothing for the first two failures, then unit, 2 unit … (30 s cap).
        let promised = (3...10).map { min(unit * (1 << ($0 - 3)), .seconds(30)) }
        let kept = unitExpected && named.count == promised.count
            && zip(named, promised).allSatisfy { abs(($0 - $1).seconds) <= max(0.05, $1.seconds * 0.1) }
        let minimum = promised.dropLast().reduce(Duration.zero, +)
        return Paced(attempts: 10, elapsed: elapsed, minimum: minimum, unit: unit,
                     delaysNamed: named.map(PasswordDelayText.format), scheduleKept: kept, rightPasswordWorks: works)
    }

    /// Wrong passwords as fast as one client can send them, at the real 1 s unit.
    static func greedy(daemonPath: String, seconds: Double) throws -> Greedy {
        let world = try ActivatedDaemonWorld(daemonPath: daemonPath)
        let connection = try world.connect()
        defer { connection.close() }
        try createLocked(connection)
        // The cost of one check with nothing in the way: a keychain nobody is guessing at.
        _ = try NativeCalls.call(connection, .createKeychain, [.string("other"), .bytes(password)])
        _ = try NativeCalls.call(connection, .lock, [.string("other")])
        let unthrottled = KeywellBenchTiming.measure {
            for _ in 0..<2 { _ = try? NativeCalls.call(connection, .unlock, [.string("other"), .bytes(Array("x".utf8))]) }
        }
        var calls = 0
        var checked = 0
        var last = ""
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            last = wrongUnlock(connection, calls)
            calls += 1
            if !last.contains("too many wrong passwords") { checked += 1 }
        }
        return Greedy(seconds: seconds, calls: calls, checked: checked, unthrottledPerSecond: 2 / unthrottled.seconds,
                      lastDetail: last)
    }

    private static func createLocked(_ connection: DBusConnection) throws {
        _ = try NativeCalls.call(connection, .createKeychain, [.string(keychain), .bytes(password)])
        _ = try NativeCalls.call(connection, .lock, [.string(keychain)])
    }

    /// One wrong Unlock; returns the error message (which names any delay).
    private static func wrongUnlock(_ connection: DBusConnection, _ attempt: Int) -> String {
        do {
            _ = try NativeCalls.call(connection, .unlock, [.string(keychain), .bytes(Array("guess \(attempt)".utf8))])
            return "unlocked?!"
        } catch {
            return (error as? DBusError)?.message ?? "\(error)"
        }
    }

    /// "… allowed in 0.400 s)" or "… try again in 2 s)" → the duration.
    static func delay(in message: String) -> Duration? {
        for marker in ["allowed in ", "try again in "] {
            guard let range = message.range(of: marker) else { continue }
            let number = message[range.upperBound...].prefix { $0.isNumber || $0 == "." }
            if let value = Double(number) { return .milliseconds(Int(value * 1000)) }
        }
        return nil
    }
}

enum PasswordDelayText {
    static func format(_ duration: Duration) -> String { String(format: "%.1f s", duration.seconds) }
}
