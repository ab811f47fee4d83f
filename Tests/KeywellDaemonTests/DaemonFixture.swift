import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// A private session bus whose activation file starts the real `keywelld` (fast KDF, verbose log
/// in the bus's temporary folder), and a client connection to it.
// @unchecked: immutable after init; the bus and connection it holds are thread-safe.
final class DaemonFixture: @unchecked Sendable {
    let bus: PrivateSessionBus
    let client: DBusConnection
    let logPath: String
    let wrapperPath: String

    /// The built daemon: `$KEYWELLD`, else `keywelld` next to the test bundle.
    static var keywelldPath: String {
        if let path = ProcessInfo.processInfo.environment["KEYWELLD"], !path.isEmpty { return path }
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return ((bundle as NSString).deletingLastPathComponent as NSString).appendingPathComponent("keywelld")
    }

    /// `environment`: more variables for the activated daemon (quoted for sh).
    init(activation: Bool = true, environment: [String: String] = [:]) throws {
        bus = try PrivateSessionBus()
        logPath = bus.directory.subpath("keywelld.log")
        // dbus-daemon passes its own environment (the test's XDG folders) to what it activates.
        let exports = environment.map { "export \($0.key)='\($0.value)'\n" }.joined()
        wrapperPath = try bus.directory.write("""
            #!/bin/sh
            \(exports)KEYWELL_TEST_FAST_KDF=1 exec '\(Self.keywelldPath)' --verbose 2>>'\(logPath)'

            """, to: "keywelld-test", mode: 0o755)
        if activation {
            try bus.installService(name: KeywellNames.busName, exec: wrapperPath)
        }
        client = try bus.connect()
    }

    deinit {
        client.close()
        bus.stop()
    }

    /// The daemon's log so far (stderr, verbose).
    var daemonLog: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Environment for a keywelld started by hand on this bus.
    var daemonEnvironment: [String: String] { bus.processEnvironment(adding: ["KEYWELL_TEST_FAST_KDF": "1"]) }

    // MARK: Calls

    @discardableResult
    func call(_ member: String, _ arguments: [DBusValue] = [], timeout: Duration = .seconds(20)) throws(DBusError) -> [DBusValue] {
        try client.call(destination: KeywellNames.busName, path: KeywellNames.objectPath, interface: KeywellNames.interface,
                        member: member, arguments: arguments, timeout: timeout)
    }

    @discardableResult
    func add(_ attributes: [String: DBusValue]) throws(DBusError) -> [String: DBusValue] {
        try call("Add", [.stringVariantDict(attributes)]).first?.asStringVariantDict() ?? [:]
    }

    func copyMatching(_ query: [String: DBusValue]) throws(DBusError) -> [[String: DBusValue]] {
        try call("CopyMatching", [.stringVariantDict(query)]).first?.asStringVariantDictArray() ?? []
    }

    @discardableResult
    func createKeychain(_ name: String, password: String = "pw") throws(DBusError) -> String {
        try call("CreateKeychain", [.string(name), .bytes(Array(password.utf8))]).string(at: 0)
    }

    func info(_ keychain: String) throws(DBusError) -> [String: DBusValue] {
        try call("GetInfo", [.string(keychain)]).stringVariantDict(at: 0)
    }

    /// The running daemon's pid (asks the bus who owns the name).
    func daemonPID() throws -> pid_t {
        guard let owner = try client.nameOwner(KeywellNames.busName) else { throw TestSupportError("nobody owns the name") }
        return pid_t(bitPattern: try client.unixProcessID(of: owner))
    }

    /// Waits until nobody owns the name (the daemon exited).
    func waitForNameToVanish(timeout: Duration = .seconds(10)) throws {
        let deadline = ContinuousClock.now + timeout
        while try client.nameHasOwner(KeywellNames.busName) {
            guard ContinuousClock.now < deadline else { throw TestSupportError("the daemon still owns its name") }
            usleep(10_000)
        }
    }

    /// Waits until `name` has an owner.
    func waitForName(timeout: Duration = .seconds(10)) throws {
        let deadline = ContinuousClock.now + timeout
        while try !client.nameHasOwner(KeywellNames.busName) {
            guard ContinuousClock.now < deadline else { throw TestSupportError("nobody took \(KeywellNames.busName)") }
            usleep(10_000)
        }
    }
}

// MARK: Dictionaries

func genp(_ account: String, service: String = "svc", _ extra: [String: DBusValue] = [:]) -> [String: DBusValue] {
    ["class": "genp", "acct": .string(account), "svce": .string(service)].merging(extra) { $1 }
}

func secret(_ text: String) -> DBusValue { .bytes(Array(text.utf8)) }

// MARK: Errors

/// Expects `body` to fail with `org.keywell.Keychain1.Error.<name>` and a message starting with the status.
func expectKeychainError(_ name: String, _ status: OSStatus, sourceLocation: SourceLocation = #_sourceLocation,
                         _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected \(name), the call succeeded", sourceLocation: sourceLocation)
    } catch {
        guard let error = error as? DBusError else {
            Issue.record("expected \(name), got \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect(error.name == KeywellNames.errorPrefix + name, sourceLocation: sourceLocation)
        #expect(error.message.hasPrefix("\(status): \(SecStatus.message(for: status))"), "\(error.message)",
                sourceLocation: sourceLocation)
    }
}

// MARK: Signals

/// Records the native API's signals as the client receives them.
// @unchecked: `received` and `subscription` are only touched under `condition`.
final class SignalRecorder: @unchecked Sendable {
    struct Received: Equatable, CustomStringConvertible {
        var member: String
        var argument: DBusValue
        var description: String { "\(member)(\(argument))" }
    }

    private let condition = NSCondition()
    private var received: [Received] = []
    private var subscription: DBusSignalSubscription?

    init(_ connection: DBusConnection) throws {
        subscription = try connection.addMatch(DBusMatchRule(interface: KeywellNames.interface)) { [weak self] signal in
            guard let self, let argument = signal.arguments.first else { return }
            condition.lock()
            received.append(Received(member: signal.member, argument: argument))
            condition.broadcast()
            condition.unlock()
        }
    }

    var all: [Received] { condition.withLock { received } }

    func clear() { condition.withLock { received.removeAll() } }

    /// Waits for a signal; true if it came.
    @discardableResult
    func wait(for expected: Received, timeout: Duration = .seconds(5)) -> Bool {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        while !received.contains(expected) {
            guard condition.wait(until: deadline) else { return received.contains(expected) }
        }
        return true
    }

    /// Everything received up to a marker: a SearchListChanged the test causes after the action,
    /// so that what the action sent has surely arrived (the daemon sends in order).
    func signals(before fixture: DaemonFixture, marker: String = "marker-\(UUID().uuidString)") throws -> [Received] {
        try fixture.call("SetSearchList", [.stringArray([marker])])
        let expected = Received(member: "SearchListChanged", argument: .stringArray([marker]))
        guard wait(for: expected) else { throw TestSupportError("the marker signal never came") }
        let all = self.all
        return Array(all[..<all.firstIndex(of: expected)!])
    }
}

func signal(_ member: String, _ keychain: String) -> SignalRecorder.Received {
    .init(member: member, argument: .string(keychain))
}
