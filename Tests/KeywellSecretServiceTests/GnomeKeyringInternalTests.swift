import Foundation
import KeywellDBus
import KeywellTestSupport
import Testing

/// gnome-keyring's private interface on the service object, as Seahorse and GNOME tools call it
/// (docs/secret-service.md, "gnome-keyring's private interface"); errors as gnome-keyring gives them.
@Suite struct GnomeKeyringInternalTests {
    static let interface = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"
    static let login = "/org/freedesktop/secrets/collection/login"
    static let denied = "org.gnome.keyring.Error.Denied"

    @discardableResult
    private func internalCall(_ fixture: SecretServiceFixture, _ member: String, _ arguments: [DBusValue],
                              on connection: DBusConnection? = nil) throws(DBusError) -> [DBusValue] {
        try (connection ?? fixture.client).call(destination: SecretServiceFixture.service, path: SecretServiceFixture.root,
                                                interface: Self.interface, member: member, arguments: arguments, timeout: .seconds(20))
    }

    private func errorName(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as DBusError {
            return error.name
        } catch {
            return "\(error)"
        }
    }

    private func isLocked(_ fixture: SecretServiceFixture, _ keychain: String) throws -> Bool {
        try fixture.property("/org/freedesktop/secrets/collection/\(keychain)", "Collection", "Locked") == .bool(true)
    }

    @Test func createWithMasterPasswordMakesAnUnlockedKeychainWithoutAPrompt() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession(dh: true)
        let properties = DBusValue.stringVariantDict(["org.freedesktop.Secret.Collection.Label": .string("Work keys")])
        let reply = try internalCall(fixture, "CreateWithMasterPassword", [properties, try session.encode("master-pw")])
        #expect(reply == [.objectPath("/org/freedesktop/secrets/collection/Work_20keys")])
        #expect(!fixture.pinentryLog.contains("GETPIN"), "no prompt")
        #expect(try fixture.property("/org/freedesktop/secrets/collection/Work_20keys", "Collection", "Label") == .string("Work keys"))
        #expect(try !isLocked(fixture, "Work_20keys"))
        #expect(try fixture.native("GetSearchList").first?.stringArrayValue?.contains("Work keys") == true)
        // No alias: login stays the default.
        #expect(try fixture.native("GetDefaultKeychain") == [.string("login")])
        // Its password is the master password sent.
        try fixture.native("Lock", [.string("Work keys")])
        try fixture.native("Unlock", [.string("Work keys"), .bytes(Array("master-pw".utf8))])
        #expect(!fixture.daemonLog.contains("master-pw"))
    }

    @Test func unlockWithMasterPasswordChecksThePassword() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession(dh: true)
        try fixture.native("Lock", [.string("login")])
        #expect(errorName { try internalCall(fixture, "UnlockWithMasterPassword", [.objectPath(Self.login), try session.encode("wrong")]) }
                == Self.denied)
        #expect(try isLocked(fixture, "login"))
        try internalCall(fixture, "UnlockWithMasterPassword", [.objectPath(Self.login), try session.encode("login-pw")])
        #expect(try !isLocked(fixture, "login"))
        // Through an alias path too, and a plain session; the in-memory collection needs nothing.
        try fixture.native("Lock", [.string("login")])
        let plain = try fixture.openSession()
        try internalCall(fixture, "UnlockWithMasterPassword", [.objectPath("/org/freedesktop/secrets/aliases/default"), try plain.encode("login-pw")])
        #expect(try !isLocked(fixture, "login"))
        try internalCall(fixture, "UnlockWithMasterPassword", [.objectPath("/org/freedesktop/secrets/collection/session"), try plain.encode("")])
    }

    @Test func changeWithMasterPasswordNeedsTheOriginal() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession(dh: true)
        #expect(errorName {
            try internalCall(fixture, "ChangeWithMasterPassword", [.objectPath(Self.login), try session.encode("wrong"), try session.encode("new-pw")])
        } == Self.denied)
        try fixture.native("Unlock", [.string("login"), .bytes(Array("login-pw".utf8))])
        try internalCall(fixture, "ChangeWithMasterPassword", [.objectPath(Self.login), try session.encode("login-pw"), try session.encode("new-pw")])
        try fixture.native("Lock", [.string("login")])
        #expect(errorName { try fixture.native("Unlock", [.string("login"), .bytes(Array("login-pw".utf8))]) } != nil)
        try fixture.native("Unlock", [.string("login"), .bytes(Array("new-pw".utf8))])
    }

    @Test func badInputGetsGnomeKeyringsErrors() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession(dh: true)
        let good = try session.encode("login-pw")
        let missing = "/org/freedesktop/secrets/collection/nothing"
        // Unknown collection.
        #expect(errorName { try internalCall(fixture, "UnlockWithMasterPassword", [.objectPath(missing), good]) }
                == "org.freedesktop.Secret.Error.NoSuchObject")
        #expect(errorName { try internalCall(fixture, "ChangeWithMasterPassword", [.objectPath(missing), good, good]) }
                == "org.freedesktop.Secret.Error.NoSuchObject")
        #expect(errorName { try internalCall(fixture, "ChangeWithPrompt", [.objectPath(missing)]) }
                == "org.freedesktop.Secret.Error.NoSuchObject")
        // A session that does not exist, or is another connection's.
        let unknown = DBusValue.structure([.objectPath("/org/freedesktop/secrets/session/999"), .bytes([]), .bytes(Array("x".utf8)), .string("text/plain")])
        #expect(errorName { try internalCall(fixture, "UnlockWithMasterPassword", [.objectPath(Self.login), unknown]) }
                == "org.freedesktop.Secret.Error.NoSession")
        let other = try fixture.bus.connect()
        defer { other.close() }
        #expect(errorName { try internalCall(fixture, "UnlockWithMasterPassword", [.objectPath(Self.login), good], on: other) }
                == "org.freedesktop.Secret.Error.NoSession")
        // Ciphertext the session key does not open.
        let garbled = DBusValue.structure([.objectPath(session.path), .bytes(Array(repeating: 1, count: 16)), .bytes(Array(repeating: 2, count: 15)), .string("text/plain")])
        #expect(errorName { try internalCall(fixture, "UnlockWithMasterPassword", [.objectPath(Self.login), garbled]) }
                == "org.freedesktop.DBus.Error.InvalidArgs")
        // The wrong struct.
        #expect(errorName { try internalCall(fixture, "UnlockWithMasterPassword", [.objectPath(Self.login), .string("login-pw")]) }
                == "org.freedesktop.DBus.Error.InvalidArgs")
        // A bad property of the new collection.
        let badLabel = DBusValue.stringVariantDict(["org.freedesktop.Secret.Collection.Label": .uint32(3)])
        #expect(errorName { try internalCall(fixture, "CreateWithMasterPassword", [badLabel, good]) }
                == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(try fixture.native("ListKeychains") == [.stringArray(["login"])], "nothing made, nothing lost")
    }

    /// Master passwords count against the keychain like every other way in: once the throttle's
    /// delay starts, even the right password is refused unchecked.
    @Test func masterPasswordsGoThroughTheThrottle() throws {
        let fixture = try SecretServiceFixture(environment: "KEYWELL_TEST_THROTTLE_UNIT_MS=600000")
        try fixture.createLogin()
        let session = try fixture.openSession(dh: true)
        try fixture.native("Lock", [.string("login")])
        for _ in 0...2 {
            #expect(errorName { try internalCall(fixture, "UnlockWithMasterPassword", [.objectPath(Self.login), try session.encode("guess")]) }
                    == Self.denied)
        }
        #expect(errorName { try internalCall(fixture, "UnlockWithMasterPassword", [.objectPath(Self.login), try session.encode("login-pw")]) }
                == Self.denied)
        #expect(try isLocked(fixture, "login"))
        #expect(errorName {
            try internalCall(fixture, "ChangeWithMasterPassword", [.objectPath(Self.login), try session.encode("login-pw"), try session.encode("x")])
        } == Self.denied)
    }

    @Test func changeWithPromptAsksForTheOldPasswordThenTheNewOne() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        try fixture.native("Lock", [.string("login")])
        try fixture.answers("wrong", "login-pw", "new-pw")
        let prompt = try internalCall(fixture, "ChangeWithPrompt", [.objectPath(Self.login)]).objectPath(at: 0)
        let (dismissed, result) = try fixture.runPrompt(prompt)
        #expect(!dismissed)
        #expect(result == .string(""))
        #expect(fixture.pinentryLog.contains("SETERROR"), "the wrong old password was told")
        #expect(fixture.pinentryLog.contains("SETREPEAT"), "the new password is asked twice")
        try fixture.native("Lock", [.string("login")])
        try fixture.native("Unlock", [.string("login"), .bytes(Array("new-pw".utf8))])

        // Cancelled: dismissed, nothing changed.
        try fixture.answers("new-pw", nil)
        let cancelled = try internalCall(fixture, "ChangeWithPrompt", [.objectPath(Self.login)]).objectPath(at: 0)
        let outcome = try fixture.runPrompt(cancelled)
        #expect(outcome.dismissed && outcome.result == .string(""))
        try fixture.native("Lock", [.string("login")])
        try fixture.native("Unlock", [.string("login"), .bytes(Array("new-pw".utf8))])
    }
}
