import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// KWallet's API carries passwords as D-Bus strings: keywelld must leave no copy of one in its
/// memory once done, as it leaves none of the byte arrays the other faces use (docs/kwallet.md,
/// "Passwords in memory"). The attack: read the daemon's memory, as root could, after a password
/// went through `writePassword`, `readPassword` and `passwordList` and its wallet was locked.
@Suite(.serialized) struct KWalletPasswordMemoryTests {
    private static let app = "kwallet-memscan"

    private func kwallet(_ fixture: DaemonFixture, _ member: String, _ arguments: [DBusValue]) throws(DBusError) -> [DBusValue] {
        try fixture.client.call(destination: KWalletProtocol.busNames[0], path: KWalletProtocol.objectPaths[0],
                                interface: KWalletProtocol.interface, member: member, arguments: arguments)
    }

    @Test func aPasswordLeavesNoCopyInTheDaemonOnceItsWalletIsLocked() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login", password: "memscan-\(UUID().uuidString)")
        let password = "kwallet-password-\(UUID().uuidString)"
        let handle = try kwallet(fixture, "open", [.string(KWalletProtocol.defaultWallet), .int64(0), .string(Self.app)]).int32(at: 0)
        #expect(handle > 0)
        #expect(try kwallet(fixture, "writePassword", [.int32(handle), "F", "k", .string(password), .string(Self.app)]) == [.int32(0)])
        #expect(try kwallet(fixture, "readPassword", [.int32(handle), "F", "k", .string(Self.app)]) == [.string(password)])
        let listed = try kwallet(fixture, "passwordList", [.int32(handle), "F", .string(Self.app)])
        #expect(listed.first?.asStringVariantDict()?["k"]?.stringValue == password)

        try fixture.call("Lock", ["login"])
        #expect(try fixture.info("login")["locked"] == true)
        // libdbus's receive buffer keeps the last messages read until later ones overwrite them,
        // which its API does not reach (SECURITY.md): longer calls overwrite it first.
        let filler = String(repeating: "x", count: 400)
        for _ in 0..<3 { _ = try kwallet(fixture, "isOpen", [.string(filler)]) }

        let memory = LiveProcessMemory(pid: try fixture.daemonPID())
        let found = try memory.mappings(containing: Array(password.utf8))
        #expect(found.isEmpty, "the KWallet password is still in keywelld's memory: \(found)")
    }
}
