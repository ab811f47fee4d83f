import Foundation
import KeywellProtocol
import KeywellTestSupport
import Testing

@testable import KeywellCore

/// A private XDG layout in a fresh temporary folder (removed afterwards) and stores over it.
// @unchecked: immutable after init; it only names folders.
final class TestEnvironment: @unchecked Sendable {
    let root: URL
    let paths: KeywellPaths

    init() throws {
        var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("keywell-core-test-XXXXXX").utf8CString)
        guard let created = mkdtemp(&template) else { throw TestFailure("mkdtemp failed") }
        root = URL(fileURLWithPath: String(cString: created))
        paths = KeywellPaths(
            keychainsDirectory: root.appendingPathComponent("data/keywell/keychains"),
            configDirectory: root.appendingPathComponent("config/keywell"),
            runtimeDirectory: root.appendingPathComponent("run/keywell"))
    }

    deinit {
        try? FileManager.default.removeItem(at: root)
    }

    var keychainsDirectory: String { paths.keychainsDirectory.path }

    func path(of name: String) -> String { keychainsDirectory + "/" + name + ".keychain-db" }

    func makeStore(kdf: KDFParameters = .fastForTests, throttleUnit: Duration = PasswordThrottle.defaultUnit) throws -> KeychainStore {
        try KeychainStore(paths: paths, kdf: kdf, throttleUnit: throttleUnit)
    }

    /// A store with an unlocked keychain of each given name (password "pw").
    func makeStore(with names: [String], throttleUnit: Duration = PasswordThrottle.defaultUnit) throws -> KeychainStore {
        let store = try makeStore(throttleUnit: throttleUnit)
        for name in names { _ = try store.createKeychain(name, password: secret("pw")) }
        return store
    }

    /// The folder of the committed fixture files (Tests/Fixtures).
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures").standardized.path

    /// A private copy of a fixture (a file 0600 in a folder 0700, as Keywell wants them).
    static func copyFixture(_ source: String, to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.copyItem(atPath: source, toPath: path)
        chmod(path, 0o600)
    }

    /// `Tests/Fixtures/<fixture>` installed as this user's `login` keychain; its path.
    func installLogin(fixture: String) throws -> String {
        let path = path(of: "login")
        try Self.copyFixture(Self.fixtures + "/" + fixture, to: path)
        return path
    }

    /// Every file under the root, recursively.
    func allFiles() -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        var files: [String] = []
        while let relative = enumerator?.nextObject() as? String {
            let path = root.path + "/" + relative
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files.append(path)
            }
        }
        return files
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Collects a store's events.
// @unchecked: `recorded` is only touched under `lock`.
final class EventRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [KeychainEvent] = []

    init(_ store: KeychainStore) {
        store.onEvent = { [weak self] event in self?.append(event) }
    }

    private func append(_ event: KeychainEvent) {
        lock.lock()
        recorded.append(event)
        lock.unlock()
    }

    /// The events so far, and forget them.
    func take() -> [KeychainEvent] {
        lock.lock()
        defer { recorded = []; lock.unlock() }
        return recorded
    }
}

func secret(_ text: String) -> SecretBytes { SecretBytes(copying: Array(text.utf8)) }

/// Fails the test unless `body` throws a `KeychainError` with `status`.
@discardableResult
func expectStatus(
    _ status: OSStatus, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) -> KeychainError? {
    let expected = SecStatus.name(for: status) ?? "\(status)"
    do {
        try body()
        Issue.record("expected \(expected) but the call succeeded. \(comment.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
        return nil
    } catch let error as KeychainError {
        #expect(error.status == status, "expected \(expected), got \(error). \(comment.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected \(expected), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Builders for item dictionaries.
func genp(_ account: String, _ service: String, _ extra: WireDictionary = [:]) -> WireDictionary {
    var dictionary: WireDictionary = [
        WireKey.class: .string(WireKey.classGenericPassword), "acct": .string(account), "svce": .string(service),
    ]
    dictionary.merge(extra) { $1 }
    return dictionary
}

func inet(_ account: String, _ server: String, _ extra: WireDictionary = [:]) -> WireDictionary {
    var dictionary: WireDictionary = [
        WireKey.class: .string(WireKey.classInternetPassword), "acct": .string(account), "srvr": .string(server),
    ]
    dictionary.merge(extra) { $1 }
    return dictionary
}

let returnData: WireDictionary = [WireKey.returnData: .bool(true)]
let returnAttributes: WireDictionary = [WireKey.returnAttributes: .bool(true)]
let limitAll: WireDictionary = [WireKey.matchLimit: .string(WireKey.matchLimitAll)]

func data(_ text: String) -> WireValue { .data(Data(text.utf8)) }

func + (left: WireDictionary, right: WireDictionary) -> WireDictionary {
    left.merging(right) { $1 }
}

/// Runs a program and returns its standard output; fails on a non-zero exit.
@discardableResult
func run(_ executable: String, _ arguments: [String]) throws -> String {
    let finished = try ChildProcess.run(executable, arguments: arguments)
    let text = finished.standardOutputText + finished.standardErrorText
    guard finished.termination.succeeded else {
        throw TestFailure("\(executable) \(arguments.joined(separator: " ")) ended with \(finished.termination): \(text)")
    }
    return text
}

/// The sqlite3 shell on a keychain file, as an attacker with write access to the disk would use it.
@discardableResult
func sqlite(_ path: String, _ sql: String) throws -> String {
    try run("/usr/bin/sqlite3", [path, sql]).trimmingCharacters(in: .whitespacesAndNewlines)
}
