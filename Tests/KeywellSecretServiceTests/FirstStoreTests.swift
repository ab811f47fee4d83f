import Foundation
import KeywellDBus
import KeywellTestSupport
import Testing

/// What a store ends in when it cannot go on by itself (docs/secret-service.md, "First store"),
/// and the item times `keywell migrate --from-secret-service` carries over, through the real daemon.
@Suite struct FirstStoreTests {
    static let defaultAlias = "/org/freedesktop/secrets/aliases/default"

    /// The D-Bus error `body` fails with.
    private func failure(_ body: () throws -> Void) -> DBusError? {
        do {
            try body()
            return nil
        } catch let error as DBusError {
            return error
        } catch {
            return nil
        }
    }

    private func createItem(_ fixture: SecretServiceFixture, in collection: String, session: ClientSession,
                            extra: [String: DBusValue] = [:]) throws -> [DBusValue] {
        var properties: [String: DBusValue] = [
            "org.freedesktop.Secret.Item.Label": .string("x"),
            "org.freedesktop.Secret.Item.Attributes": .stringStringDict(["service": "s"]),
        ]
        properties.merge(extra) { _, new in new }
        return try fixture.call(collection, "Collection", "CreateItem",
                                [.stringVariantDict(properties), try session.encode("v"), .bool(false)])
    }

    @Test func aDismissedCreationPromptIsExplainedInTheRetriedCreateItem() throws {
        let fixture = try SecretServiceFixture()
        let session = try fixture.openSession()
        // libsecret's path: CreateItem on the alias, CreateCollection, its prompt, CreateItem again.
        let first = failure { _ = try createItem(fixture, in: Self.defaultAlias, session: session) }
        #expect(first?.name == "org.freedesktop.DBus.Error.UnknownMethod")
        #expect(first?.message.contains("no keychain is the default one") == true)
        #expect(first?.message.contains("ended") == false)
        let reply = try fixture.service("CreateCollection", [
            .stringVariantDict(["org.freedesktop.Secret.Collection.Label": .string("Default keyring")]), .string("default"),
        ])
        try fixture.answers(nil)
        #expect(try fixture.runPrompt(try reply.objectPath(at: 1)).dismissed)
        let retried = failure { _ = try createItem(fixture, in: Self.defaultAlias, session: session) }
        #expect(retried?.name == "org.freedesktop.DBus.Error.UnknownMethod")
        let message = retried?.message ?? ""
        #expect(message.contains("the prompt to create one ended: the password dialog was cancelled"), "\(message)")
        #expect(message.contains("keywell create-keychain login"))
        // Another connection never had a prompt: its error has no reason in it.
        let other = try fixture.bus.connect()
        let otherSession = try fixture.openSession(on: other)
        let properties = DBusValue.stringVariantDict(["org.freedesktop.Secret.Item.Attributes": .stringStringDict(["a": "b"])])
        let otherError = failure {
            _ = try fixture.call(Self.defaultAlias, "Collection", "CreateItem",
                                 [properties, try otherSession.encode("v"), .bool(false)], on: other)
        }
        #expect(otherError?.message.contains("ended") == false)
    }

    @Test func aLockedKeychainSaysHowToUnlockIt() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        try fixture.native("Lock", [.string("login")])
        let session = try fixture.openSession()
        let error = failure { _ = try createItem(fixture, in: Self.defaultAlias, session: session) }
        #expect(error?.name == "org.freedesktop.Secret.Error.IsLocked")
        #expect(error?.message.contains("keywell unlock-keychain login") == true)
    }

    @Test func carriedTimesAreKeptAndNeverLaterThanNow() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession()
        let old = try createItem(fixture, in: Self.defaultAlias, session: session, extra: [
            "org.keywell.Item.Created": .uint64(1_000_000_000), "org.keywell.Item.Modified": .uint64(1_100_000_000),
        ]).objectPath(at: 0)
        #expect(try fixture.property(old, "Item", "Created") == .uint64(1_000_000_000))
        #expect(try fixture.property(old, "Item", "Modified") == .uint64(1_100_000_000))

        let now = UInt64(Date().timeIntervalSince1970)
        let future = try fixture.call(Self.defaultAlias, "Collection", "CreateItem", [
            .stringVariantDict([
                "org.freedesktop.Secret.Item.Attributes": .stringStringDict(["service": "later"]),
                "org.keywell.Item.Created": .uint64(now + 1_000_000), "org.keywell.Item.Modified": .uint64(UInt64.max),
            ]), try session.encode("v"), .bool(false),
        ]).objectPath(at: 0)
        let created = try fixture.property(future, "Item", "Created").uint64Value ?? .max
        let modified = try fixture.property(future, "Item", "Modified").uint64Value ?? .max
        #expect(created <= UInt64(Date().timeIntervalSince1970) && created >= now - 60)
        #expect(modified <= UInt64(Date().timeIntervalSince1970) && modified >= now - 60)
    }
}
