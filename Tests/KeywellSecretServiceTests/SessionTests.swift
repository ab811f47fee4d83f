import Foundation
import KeywellDBus
import KeywellTestSupport
import Testing

/// Sessions as libsecret and secretstorage negotiate them, through the real daemon.
@Suite struct SessionTests {
    @Test(arguments: [false, true]) func secretsRoundTripInBothSessionKinds(dh: Bool) throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession(dh: dh)
        #expect(session.path.hasPrefix("/org/freedesktop/secrets/session/"))
        let item = try fixture.createItem(["service": "s", "account": "a"], secret: "pässwörd \(dh)", session: session)
        #expect(try fixture.getSecret(item, session: session) == "pässwörd \(dh)")

        try fixture.call(item, "Item", "SetSecret", [try session.encode("changed", contentType: "application/octet-stream")])
        let reply = try fixture.service("GetSecrets", [.objectPathArray([item]), .objectPath(session.path)])
        guard let entries = reply.first?.dictionaryEntries, entries.count == 1 else {
            Issue.record("GetSecrets gave \(reply)")
            return
        }
        #expect(reply[0].signature == "a{o(oayays)}")
        #expect(entries[0].key.objectPathValue == item)
        #expect(try session.decode(entries[0].value) == "changed")
        #expect(entries[0].value.structureFields?[3].stringValue == "application/octet-stream")
    }

    @Test func plainOutputAndDHPublicKey() throws {
        let fixture = try SecretServiceFixture()
        let plain = try fixture.service("OpenSession", [.string("plain"), .variant(.string(""))])
        #expect(plain[0].signature == "v")
        let padded = try fixture.openSession(dh: true)  // unpadded client key accepted
        #expect(padded.cipher != nil)
    }

    @Test func unknownAlgorithmsAndBadKeysAreRefused() throws {
        let fixture = try SecretServiceFixture()
        expectError("org.freedesktop.DBus.Error.NotSupported") {
            try fixture.service("OpenSession", [.string("dh-ietf1024-sha256-aes128-cbc-pkcs7x"), .variant(.string(""))])
        }
        expectError("org.freedesktop.DBus.Error.InvalidArgs") {
            try fixture.service("OpenSession", [.string(SecretServiceFixture.dh), .variant(.string("not bytes"))])
        }
        expectError("org.freedesktop.DBus.Error.InvalidArgs") {
            try fixture.service("OpenSession", [.string(SecretServiceFixture.dh), .variant(.bytes([1]))])
        }
        expectError("org.freedesktop.DBus.Error.InvalidArgs") {
            try fixture.service("OpenSession", [.string("plain")])
        }
    }

    @Test func sessionsBelongToTheirConnection() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let mine = try fixture.openSession(dh: true)
        let item = try fixture.createItem(["k": "v"], session: mine)
        let other = try fixture.bus.connect()
        defer { other.close() }
        expectError("org.freedesktop.Secret.Error.NoSession") {
            try fixture.call(item, "Item", "GetSecret", [.objectPath(mine.path)], on: other)
        }
        expectError("org.freedesktop.DBus.Error.UnknownMethod") {
            try fixture.call(mine.path, "Session", "Close", on: other)
        }
        expectError("org.freedesktop.Secret.Error.NoSession") {
            try fixture.service("GetSecrets", [.objectPathArray([item]), .objectPath(mine.path)], on: other)
        }
        // A secret sent through someone else's session is refused too.
        let properties = DBusValue.stringVariantDict(["org.freedesktop.Secret.Item.Attributes": .stringStringDict(["x": "y"])])
        expectError("org.freedesktop.Secret.Error.NoSession") {
            try fixture.call("/org/freedesktop/secrets/aliases/default", "Collection", "CreateItem",
                             [properties, try mine.encode("s"), .bool(false)], on: other)
        }
        try fixture.call(mine.path, "Session", "Close")
        expectError("org.freedesktop.Secret.Error.NoSession") {
            try fixture.call(item, "Item", "GetSecret", [.objectPath(mine.path)])
        }
    }

    @Test func sessionsOfVanishedClientsAreFreed() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let leaving = try fixture.bus.connect()
        let session = try fixture.openSession(dh: true, on: leaving)
        let name = leaving.uniqueName!
        leaving.close()
        let deadline = Date().addingTimeInterval(10)
        while !fixture.daemonLog.contains("closed 1 Secret Service session(s) of \(name)") && Date() < deadline {
            usleep(20_000)
        }
        #expect(fixture.daemonLog.contains("closed 1 Secret Service session(s) of \(name)"))
        _ = session
    }

    @Test func malformedSecretsAreInvalidArgs() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession(dh: true)
        let properties = DBusValue.stringVariantDict([:])
        let badIV = DBusValue.structure([.objectPath(session.path), .bytes([1, 2, 3]), .bytes(Array(repeating: 0, count: 16)), .string("text/plain")])
        expectError("org.freedesktop.DBus.Error.InvalidArgs") {
            try fixture.call("/org/freedesktop/secrets/aliases/default", "Collection", "CreateItem", [properties, badIV, .bool(false)])
        }
        let badLength = DBusValue.structure([.objectPath(session.path), .bytes(Array(repeating: 0, count: 16)), .bytes([1, 2, 3]), .string("text/plain")])
        expectError("org.freedesktop.DBus.Error.InvalidArgs") {
            try fixture.call("/org/freedesktop/secrets/aliases/default", "Collection", "CreateItem", [properties, badLength, .bool(false)])
        }
        expectError("org.freedesktop.DBus.Error.InvalidArgs") {
            try fixture.call("/org/freedesktop/secrets/aliases/default", "Collection", "CreateItem", [properties, .string("x"), .bool(false)])
        }
        // The daemon keeps serving.
        #expect(try fixture.search([:]).unlocked.isEmpty)
    }
}
