import Foundation
import KeywellProtocol
import KeywellTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A private session bus whose only service is the built keywelld (started by D-Bus
/// activation, as in real life), temporary XDG folders, and the built keywell run as a child
/// process, also through a symlink named `security`.
// @unchecked: immutable after init; the bus it holds is thread-safe.
final class CLISession: @unchecked Sendable {
    let bus: PrivateSessionBus
    let keywell: String
    let keywelld: String
    /// A symlink named `security` to keywell: messages then start with `security:`.
    let security: String

    init() throws {
        let binaries = try Self.binaryDirectory()
        keywell = binaries + "/keywell"
        keywelld = binaries + "/keywelld"
        bus = try PrivateSessionBus()
        try bus.installService(name: KeywellNames.busName, exec: keywelld)
        security = bus.directory.subpath("security")
        guard symlink(keywell, security) == 0 else { throw TestSupportError("cannot link \(security)") }
    }

    deinit { bus.stop() }

    /// KEYWELL_BIN_DIR (scripts/test.sh), else the folder of this test binary, where SwiftPM
    /// also puts the products.
    static func binaryDirectory() throws -> String {
        var candidates: [String] = []
        if let configured = ProcessInfo.processInfo.environment["KEYWELL_BIN_DIR"] { candidates.append(configured) }
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        candidates.append(testBinary.deletingLastPathComponent().path)
        for directory in candidates where FileManager.default.isExecutableFile(atPath: directory + "/keywell")
            && FileManager.default.isExecutableFile(atPath: directory + "/keywelld") {
            return directory
        }
        throw TestSupportError("keywell and keywelld are not built in \(candidates): run swift build first")
    }

    var environment: [String: String] { bus.processEnvironment(adding: ["LANG": "C.UTF-8"]) }
    var keychainsDirectory: String { bus.dataHome + "/keywell/keychains" }

    func path(of keychain: String) -> String { keychainsDirectory + "/" + keychain + ".keychain-db" }

    /// Runs keywell (or the `security` link) with `arguments`, stdin = `input` or /dev/null.
    @discardableResult
    func run(_ arguments: [String], input: String? = nil, as program: String? = nil,
             extraEnvironment: [String: String] = [:]) throws -> CLIResult {
        let output = try ChildProcess.run(program ?? keywell, arguments: arguments,
                                          environment: environment.merging(extraEnvironment) { $1 },
                                          standardInput: input.map { Array($0.utf8) }, timeout: .seconds(60))
        return CLIResult(output: output)
    }

    func security(_ arguments: [String], input: String? = nil) throws -> CLIResult {
        try run(arguments, input: input, as: security)
    }

    /// Runs and requires exit 0.
    @discardableResult
    func ok(_ arguments: [String], input: String? = nil) throws -> CLIResult {
        let result = try run(arguments, input: input)
        guard result.exit == 0 else { throw TestSupportError("keywell \(arguments) failed: \(result)") }
        return result
    }

    /// A new keychain with its own name, so that tests sharing a session do not meet.
    func makeKeychain(_ prefix: String = "kc", password: String = "pw") throws -> String {
        let name = "\(prefix)-\(UUID().uuidString.prefix(8))"
        try ok(["create-keychain", "-p", password, name])
        return name
    }

    /// A session with a `login` keychain that is the default and the whole search list.
    static func withLogin(password: String = "login-pw") throws -> CLISession {
        let session = try CLISession()
        try session.ok(["create-keychain", "-p", password, "login"])
        return session
    }
}

/// What a keywell run printed and how it ended.
struct CLIResult: CustomStringConvertible {
    let output: ChildProcess.Output

    var exit: Int32? { output.termination.exitCode }
    var stdout: String { output.standardOutputText }
    var stderr: String { output.standardErrorText }
    var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
    var description: String { output.description }

    /// Item blocks with their dates replaced by `<DATE>` (the regex of docs/cli.md "Item blocks").
    var maskedStdout: String { Self.maskDates(stdout) }

    static func maskDates(_ text: String) -> String {
        text.replacing(try! Regex(#"0x[0-9A-F]{32}  "\d{14}Z\\000""#), with: "<DATE>")
    }
}
