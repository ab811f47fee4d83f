import Foundation
import KeychainServices
import KeywellDBus
import KeywellProtocol
import KeywellSystem
import KeywellTestSupport
import Testing

/// A private session bus whose activation file starts the built `keywelld` (with the test-only
/// fast KDF), so that the first call of a test starts the daemon exactly as in a real session.
/// Every instance has its own home: tests do not see each other's keychains.
// @unchecked: immutable after init; the bus and client it holds are thread-safe.
final class KeychainDaemonBus: @unchecked Sendable {
    let bus: PrivateSessionBus
    let connection: DBusConnection
    let client: KeywellClient
    let logPath: String

    /// The built daemon: `$KEYWELLD`, else `keywelld` next to the test bundle.
    static var keywelldPath: String {
        if let path = ProcessInfo.processInfo.environment["KEYWELLD"], !path.isEmpty { return path }
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return ((bundle as NSString).deletingLastPathComponent as NSString).appendingPathComponent("keywelld")
    }

    static var daemonIsBuilt: Bool { FileManager.default.isExecutableFile(atPath: keywelldPath) }

    init() throws {
        try #require(Self.daemonIsBuilt, "no keywelld at \(Self.keywelldPath): build it (swift build), or set KEYWELLD")
        bus = try PrivateSessionBus()
        logPath = bus.directory.subpath("keywelld.log")
        let wrapper = try bus.directory.write("""
            #!/bin/sh
            KEYWELL_TEST_FAST_KDF=1 exec '\(Self.keywelldPath)' --verbose 2>>'\(logPath)'

            """, to: "keywelld-test", mode: 0o755)
        try bus.installService(name: KeywellNames.busName, exec: wrapper)
        connection = try bus.connect()
        client = KeywellClient(connection: connection)
    }

    deinit {
        connection.close()
        bus.stop()
    }

    /// The daemon's stderr so far, for failure messages.
    var daemonLog: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Runs Apple-shaped code against this bus's daemon.
    func run<R>(_ body: () throws -> R) rethrows -> R {
        try KeywellClient.withDefault(client, body)
    }

    /// A session as a Mac user has it: a login keychain (password `login-pw`) that is the default
    /// and the whole search list.
    func withLoginKeychain() throws -> Self {
        try client.createKeychain("login", password: SecretBytes(copying: "login-pw".utf8))
        try client.setDefaultKeychain("login")
        try client.setSearchList(["login"])
        return self
    }
}
