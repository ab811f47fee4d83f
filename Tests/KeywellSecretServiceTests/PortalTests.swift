import Foundation
import KeywellProtocol
import KeywellSystem
import KeywellTestSupport
import Testing

@testable import KeywellCore
@testable import KeywellSecretService

/// The Secret portal's pieces that need no bus: app ids, the per-app secrets in the keychain, and
/// handing a secret to a descriptor (the portal end to end: Tests/Integration/test_secret_portal.py).
@Suite struct PortalTests {
    @Test(arguments: ["org.example.App", "io.github.some_one.Tool-2", "snap.firefox", "a.b"])
    func appIDsOfFlatpakAndSnapAreTaken(_ id: String) throws {
        #expect(try PortalAppID(id).value == id)
    }

    @Test func appIDsOutsideTheGrammarAreRefusedWithTheirReason() throws {
        #expect(throws: PortalAppID.Refusal.empty) { try PortalAppID("") }
        for bad in ["org", "org..App", ".org.App", "org.App.", "org.1App", "org.exa mple.App", "org.example/App",
                    "org.example.Äpp", "org.example.App\n", "../../etc"] {
            #expect(throws: PortalAppID.Refusal.malformed, "\(bad.debugDescription)") { try PortalAppID(bad) }
        }
        let long = "org." + String(repeating: "a", count: PortalAppID.maximumLength)
        #expect(throws: PortalAppID.Refusal.tooLong(long.utf8.count)) { try PortalAppID(long) }
        #expect(try PortalAppID("o." + String(repeating: "a", count: PortalAppID.maximumLength - 2)).value.utf8.count
                    == PortalAppID.maximumLength)
    }

    @Test func eachAppHasOneSecretMadeOnFirstUseAndFoundAfterwards() throws {
        let (folder, store) = try makeLoginKeychainStore(prefix: "kwss-portal")
        _ = folder
        let secrets = AppSecrets(store: store)
        let (keychain, locked) = try secrets.keychain()
        #expect(keychain == "login" && !locked)
        let app = try PortalAppID("org.example.App")
        let first = try secrets.secret(for: app, in: keychain)
        #expect(first.created && first.secret.count == PortalNames.secretLength)
        let again = try secrets.secret(for: app, in: keychain)
        #expect(!again.created && again.secret == first.secret)
        let other = try secrets.secret(for: PortalAppID("org.example.Other"), in: keychain)
        #expect(other.created && other.secret != first.secret)
        // Stored as gnome-keyring stores it, so either finds the other's items.
        let ids = try store.secretServiceSearch(["app_id": "org.example.App", "xdg:schema": "org.freedesktop.portal.Secret"],
                                                in: keychain)
        #expect(ids.count == 1)
        #expect(try store.secretServiceItem(ids[0], in: keychain).label == "Application key for org.example.App")
    }

    @Test func aSecretGoesIntoAPipeAndTheDescriptorIsClosed() throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        let secret = Data((0..<64).map { UInt8($0) })
        try SecretHandOff.write(secret, to: FileDescriptor(rawValue: ends[1]))
        // The write end is shown closed by the read end's end of file below, not by fcntl on its
        // number: other tests run in this process, and one may get that number at once.
        var buffer = [UInt8](repeating: 0, count: 128)
        #expect(read(ends[0], &buffer, buffer.count) == 64)
        #expect(Data(buffer[..<64]) == secret)
        #expect(read(ends[0], &buffer, buffer.count) == 0)
        close(ends[0])
    }

    @Test func aPipeWithoutRoomFailsAfterItsPatienceInsteadOfBlocking() throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]) }
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        let chunk = [UInt8](repeating: 0x78, count: 4096)
        while write(ends[1], chunk, chunk.count) > 0 {}
        #expect(throws: SecretHandOff.Failure.self) {
            try SecretHandOff.write(Data(count: 64), to: FileDescriptor(rawValue: ends[1]), patience: .milliseconds(50))
        }
        // Closed even so: draining the pipe ends in end of file (a write end still open would
        // answer EAGAIN here). Checked through the pipe, not the descriptor's number, which
        // another test in this process may already have been given again.
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        var buffer = [UInt8](repeating: 0, count: 4096)
        var last = 0
        repeat { last = read(ends[0], &buffer, buffer.count) } while last > 0
        #expect(last == 0, "the write end is still open (read: \(last), errno \(errno))")
    }
}
