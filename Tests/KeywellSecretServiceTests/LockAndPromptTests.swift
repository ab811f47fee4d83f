import Foundation
import KeywellDBus
import KeywellTestSupport
import Testing

/// Locked keychains and the prompts that unlock or create them (a scripted pinentry types).
@Suite struct LockAndPromptTests {
    static let login = "/org/freedesktop/secrets/collection/login"

    /// login with one item, then locked.
    private func lockedLogin() throws -> (SecretServiceFixture, ClientSession, String) {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession(dh: true)
        let item = try fixture.createItem(["service": "s"], secret: "hidden", session: session)
        try fixture.native("Lock", [.string("login")])
        return (fixture, session, item)
    }

    @Test func lockedItemsAreFoundButNotRead() throws {
        let (fixture, session, item) = try lockedLogin()
        #expect(try fixture.search(["service": "s"]) == ([], [item]))
        #expect(try fixture.property(item, "Item", "Locked") == .bool(true))
        #expect(try fixture.property(Self.login, "Collection", "Locked") == .bool(true))
        #expect(try fixture.property(item, "Item", "Attributes").asStringStringDict() == ["service": "s"])
        expectError("org.freedesktop.Secret.Error.IsLocked") { _ = try fixture.getSecret(item, session: session) }
        expectError("org.freedesktop.Secret.Error.IsLocked") { try fixture.createItem(["x": "y"], session: session) }
        expectError("org.freedesktop.Secret.Error.IsLocked") {
            try fixture.call(item, "Item", "SetSecret", [try session.encode("x")])
        }
        expectError("org.freedesktop.Secret.Error.IsLocked") { try fixture.setProperty(item, "Item", "Label", .string("x")) }
        // GetSecrets leaves locked items out.
        let reply = try fixture.service("GetSecrets", [.objectPathArray([item]), .objectPath(session.path)])
        #expect(reply[0].dictionaryEntries?.isEmpty == true)
    }

    @Test func unlockThroughThePrompt() throws {
        let (fixture, session, item) = try lockedLogin()
        let changes = SignalWaiter()
        _ = try fixture.client.addMatch(DBusMatchRule(path: Self.login, interface: "org.freedesktop.DBus.Properties")) { changes.deliver($0) }
        try fixture.answers("wrong", "login-pw")
        let reply = try fixture.service("Unlock", [.objectPathArray([item])])
        #expect(try reply.objectPathArray(at: 0).isEmpty)
        let prompt = try reply.objectPath(at: 1)
        #expect(prompt.hasPrefix("/org/freedesktop/secrets/prompt/"))
        let (dismissed, result) = try fixture.runPrompt(prompt)
        #expect(!dismissed)
        #expect(result.signature == "ao")
        #expect(result.objectPathArrayValue == [item])
        #expect(try fixture.getSecret(item, session: session) == "hidden")
        #expect(fixture.pinentryLog.contains("SETDESC"))
        #expect(fixture.pinentryLog.contains("login"))
        #expect(fixture.pinentryLog.contains("SETERROR"), "the second attempt says the first was wrong")
        #expect(!fixture.daemonLog.contains("login-pw"))
        #expect(changes.wait { $0.arguments.count == 3 && $0.arguments[1].asStringVariantDict()?["Locked"] == .bool(false) } != nil)

        // Unlocking what is unlocked needs no prompt.
        #expect(try fixture.service("Unlock", [.objectPathArray([item, Self.login])])
                == [.objectPathArray([item, Self.login]), .objectPath("/")])
        // A prompt is gone once completed.
        expectError("org.freedesktop.DBus.Error.UnknownMethod") { try fixture.call(prompt, "Prompt", "Prompt", [.string("")]) }
    }

    @Test func cancelledAndDismissedPromptsCompleteDismissed() throws {
        let (fixture, _, item) = try lockedLogin()
        try fixture.answers(nil)
        let cancelled = try fixture.service("Unlock", [.objectPathArray([Self.login])]).objectPath(at: 1)
        let (dismissed, result) = try fixture.runPrompt(cancelled)
        #expect(dismissed)
        #expect(result.signature == "ao", "secretstorage asserts the type even when dismissed")
        #expect(try fixture.property(item, "Item", "Locked") == .bool(true))

        // Dismiss before Prompt.
        let waiting = try fixture.service("Unlock", [.objectPathArray([Self.login])]).objectPath(at: 1)
        let completed = SignalWaiter()
        _ = try fixture.client.addMatch(DBusMatchRule(path: waiting, interface: "org.freedesktop.Secret.Prompt")) { completed.deliver($0) }
        try fixture.call(waiting, "Prompt", "Dismiss")
        let signal = completed.wait()
        #expect(signal?.arguments.first == .bool(true))
        #expect(signal?.arguments.last?.variantValue?.signature == "ao")

        // Only the caller that got a prompt may use it.
        let other = try fixture.bus.connect()
        defer { other.close() }
        let mine = try fixture.service("Unlock", [.objectPathArray([Self.login])]).objectPath(at: 1)
        expectError("org.freedesktop.DBus.Error.UnknownMethod") { try fixture.call(mine, "Prompt", "Prompt", [.string("")], on: other) }
    }

    @Test func lockNeedsNoPrompt() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let reply = try fixture.service("Lock", [.objectPathArray([Self.login, "/org/freedesktop/secrets/collection/session"])])
        #expect(reply == [.objectPathArray([Self.login]), .objectPath("/")])
        #expect(try fixture.native("GetInfo", [.string("login")])[0].asStringVariantDict()?["locked"] == .bool(true))
    }

    @Test func createCollectionAsksForAPassword() throws {
        let fixture = try SecretServiceFixture()
        try fixture.answers("new-pw")
        let properties = DBusValue.stringVariantDict(["org.freedesktop.Secret.Collection.Label": .string("Default keyring")])
        let reply = try fixture.service("CreateCollection", [properties, .string("default")])
        #expect(try reply.objectPath(at: 0) == "/")
        let (dismissed, result) = try fixture.runPrompt(try reply.objectPath(at: 1))
        #expect(!dismissed)
        #expect(result == .objectPath("/org/freedesktop/secrets/collection/Default_20keyring"))
        #expect(try fixture.native("GetDefaultKeychain") == [.string("Default keyring")])
        #expect(try fixture.native("GetSearchList").first?.stringArrayValue?.contains("Default keyring") == true)
        #expect(fixture.pinentryLog.contains("SETREPEAT"), "a new password is asked twice")
        // Its password is the one typed.
        try fixture.native("Lock", [.string("Default keyring")])
        try fixture.native("Unlock", [.string("Default keyring"), .bytes(Array("new-pw".utf8))])

        // The alias exists now: the same collection comes back without a prompt.
        let again = try fixture.service("CreateCollection", [properties, .string("default")])
        #expect(again == [.objectPath("/org/freedesktop/secrets/collection/Default_20keyring"), .objectPath("/")])

        // A cancelled creation completes dismissed with an `o`.
        try fixture.answers(nil)
        let cancelled = try fixture.service("CreateCollection", [properties, .string("")]).objectPath(at: 1)
        let outcome = try fixture.runPrompt(cancelled)
        #expect(outcome.dismissed && outcome.result == .objectPath("/"))
        #expect(try fixture.native("ListKeychains") == [.stringArray(["Default keyring"])])
    }

    @Test func collectionDeleteDeletesTheKeychain() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        try fixture.native("CreateKeychain", [.string("spare"), .bytes(Array("pw".utf8))])
        #expect(try fixture.call("/org/freedesktop/secrets/collection/spare", "Collection", "Delete") == [.objectPath("/")])
        #expect(try fixture.native("ListKeychains") == [.stringArray(["login"])])
    }
}
