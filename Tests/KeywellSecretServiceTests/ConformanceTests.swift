import Foundation
import KeywellDBus
import KeywellTestSupport
import Testing

/// The answers compared with gnome-keyring's on the same calls (docs/secret-service.md,
/// "Conformance with gnome-keyring"): wrong signatures, mistyped properties, missing objects.
@Suite struct ConformanceTests {
    static let login = "/org/freedesktop/secrets/collection/login"
    static let invalidArgs = DBusError.Name.invalidArgs

    /// A value wrapped in `depth` variants.
    static func nested(_ value: DBusValue, _ depth: Int) -> DBusValue {
        (0..<depth).reduce(value) { inner, _ in .variant(inner) }
    }

    @Test func everyMethodRefusesAnyOtherSignatureBeforeDoingAnything() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession()
        let item = try fixture.createItem(["app": "signatures"], session: session)
        try fixture.native("Lock", [.string("login")])
        let prompt = try fixture.service("Unlock", [.objectPathArray([Self.login])]).objectPath(at: 1)
        #expect(prompt != "/")

        // Every method every object declares, as its introspection shows it.
        let paths = [SecretServiceFixture.root, Self.login, item, session.path, prompt]
        var checked = 0
        for path in paths {
            let xml = try fixture.client.call(destination: SecretServiceFixture.service, path: path,
                                              interface: StandardInterface.introspectable, member: "Introspect").string(at: 0)
            for interface in try DBusInterface.parse(introspectionXML: xml) {
                for method in interface.methods {
                    // No Secret Service or standard method takes a lone `u` or a nested variant.
                    var wrong: [[DBusValue]] = [[.uint32(7)], [Self.nested(.string("x"), 2)]]
                    if !method.inputs.isEmpty { wrong.append([]) }
                    if interface.name == StandardInterface.peer { continue }  // libdbus answers Peer itself
                    for arguments in wrong {
                        do {
                            _ = try fixture.client.call(destination: SecretServiceFixture.service, path: path, interface: interface.name,
                                                        member: method.name, arguments: arguments, timeout: .seconds(20))
                            Issue.record("\(interface.name).\(method.name)(\(arguments.signature)) at \(path) succeeded")
                        } catch {
                            #expect(error.name == Self.invalidArgs, "\(interface.name).\(method.name)(\(arguments.signature)): \(error)")
                        }
                        checked += 1
                    }
                }
            }
        }
        #expect(checked > 40)
        // Declared arguments and one more, or one fewer.
        let properties = DBusValue.stringVariantDict(["org.freedesktop.Secret.Item.Label": .string("x")])
        let extra: [(String, String, String, [DBusValue])] = [
            (SecretServiceFixture.root, "Service", "OpenSession", [.string("plain"), .variant(.string("")), .string("x")]),
            (SecretServiceFixture.root, "Service", "GetSecrets", [.objectPathArray([item])]),
            (SecretServiceFixture.root, "Service", "LockService", [.string("x")]),
            (Self.login, "Collection", "CreateItem", [properties, try session.encode("s")]),
            (Self.login, "Collection", "Delete", [.bool(true)]),
            (item, "Item", "Delete", [.bool(true)]),
            (item, "Item", "GetSecret", [.string(session.path)]),
            (session.path, "Session", "Close", [.string("x")]),
            (prompt, "Prompt", "Prompt", [.string(""), .string("")]),
        ]
        for (path, interface, member, arguments) in extra {
            expectError(Self.invalidArgs) { try fixture.call(path, interface, member, arguments) }
        }
        // Nothing was done: the collection, the item, the session and the prompt are all still there.
        try fixture.native("Unlock", [.string("login"), .bytes(Array("login-pw".utf8))])
        #expect(try fixture.getSecret(item, session: session) == "secret")
        try fixture.call(prompt, "Prompt", "Dismiss")
    }

    @Test func introspectWithAnArgumentIsRefusedAnywhere() throws {
        let fixture = try SecretServiceFixture()
        for path in [SecretServiceFixture.root, Self.login, "/org/freedesktop/secrets/session/99", "/nowhere"] {
            expectError(Self.invalidArgs) {
                _ = try fixture.client.call(destination: SecretServiceFixture.service, path: path,
                                            interface: StandardInterface.introspectable, member: "Introspect", arguments: [.string("x")])
            }
        }
    }

    @Test func declaredPropertiesMustHaveTheirTypeNotANestedVariantOfIt() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession()
        let attributes = DBusValue.stringStringDict(["app": "nested"])
        let refused: [(String, DBusValue)] = [
            ("org.freedesktop.Secret.Item.Label", Self.nested(.string("deep"), 32)),
            ("org.freedesktop.Secret.Item.Label", Self.nested(.string("deep"), 2)),
            ("org.freedesktop.Secret.Item.Label", .uint32(5)),
            ("org.freedesktop.Secret.Item.Type", Self.nested(.string("org.example.Type"), 2)),
            ("org.freedesktop.Secret.Item.Attributes", .stringVariantDict(["app": .string("nested")])),
            ("org.freedesktop.Secret.Item.Locked", .string("no")),
        ]
        for (key, value) in refused {
            var entries: [String: DBusValue] = ["org.freedesktop.Secret.Item.Attributes": attributes]
            entries[key] = value
            expectError(Self.invalidArgs) {
                try fixture.call(Self.login, "Collection", "CreateItem", [.stringVariantDict(entries), try session.encode("s"), .bool(false)])
            }
        }
        #expect(try fixture.search(["app": "nested"]).unlocked.isEmpty)
        // The same label, once wrapped as the dictionary wraps every value, is stored.
        let item = try fixture.createItem(["app": "nested"], label: "deep", session: session)
        #expect(try fixture.property(item, "Item", "Label") == .string("deep"))

        // Properties.Set and CreateCollection hold to the declared types the same way.
        expectError(Self.invalidArgs) { try fixture.setProperty(item, "Item", "Label", Self.nested(.string("x"), 1)) }
        expectError(Self.invalidArgs) { try fixture.setProperty(Self.login, "Collection", "Label", Self.nested(.string("x"), 31)) }
        #expect(try fixture.property(item, "Item", "Label") == .string("deep"))
        let collections = try fixture.property(SecretServiceFixture.root, "Service", "Collections")
        expectError(Self.invalidArgs) {
            try fixture.service("CreateCollection", [.stringVariantDict(["org.freedesktop.Secret.Collection.Label": Self.nested(.string("c"), 3)]),
                                                     .string("")])
        }
        #expect(try fixture.property(SecretServiceFixture.root, "Service", "Collections") == collections)
    }

    @Test func openSessionInputHasTheAlgorithmsType() throws {
        let fixture = try SecretServiceFixture()
        for input in [DBusValue.uint32(1), Self.nested(.string(""), 1), .bytes([])] {
            expectError(Self.invalidArgs) { try fixture.service("OpenSession", [.string("plain"), .variant(input)]) }
        }
        expectError(Self.invalidArgs) {
            try fixture.service("OpenSession", [.string(SecretServiceFixture.dh), .variant(Self.nested(.bytes(Array(repeating: 1, count: 128)), 1))])
        }
        // Any string is a plain session's input, as for gnome-keyring.
        _ = try fixture.service("OpenSession", [.string("plain"), .variant(.string("x"))])
    }

    @Test func callsOnMissingObjectsAnswerUnknownMethodAsGnomeKeyringDoes() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession()
        let item = try fixture.createItem(["app": "gone"], session: session)
        try fixture.call(item, "Item", "Delete")
        let missing: [(String, String, String, [DBusValue])] = [
            (item, "Item", "Delete", []),
            (item, "Item", "GetSecret", [.objectPath(session.path)]),
            (item, "Item", "SetSecret", [try session.encode("s")]),
            (Self.login + "/123", "Item", "Delete", []),
            ("/org/freedesktop/secrets/collection/nope", "Collection", "Delete", []),
            ("/org/freedesktop/secrets/collection/nope/0123456789abcdef0123456789abcdef", "Item", "Delete", []),
            ("/org/freedesktop/secrets/aliases/nope", "Collection", "SearchItems", [.stringStringDict([:])]),
            ("/org/freedesktop/secrets/session/999", "Session", "Close", []),
            ("/org/freedesktop/secrets/session/abc", "Session", "Close", []),
            ("/org/freedesktop/secrets/prompt/999", "Prompt", "Dismiss", []),
            ("/org/freedesktop/secrets/collection", "Collection", "Delete", []),
            ("/org/x", "Item", "Delete", []),
            ("/", "Item", "Delete", []),
        ]
        for (path, interface, member, arguments) in missing {
            expectError(DBusError.Name.unknownMethod) { try fixture.call(path, interface, member, arguments) }
            for (member, arguments) in [("Get", [DBusValue.string("org.freedesktop.Secret." + interface), .string("Label")]),
                                        ("GetAll", [.string("org.freedesktop.Secret." + interface)]),
                                        ("Set", [.string("org.freedesktop.Secret." + interface), .string("Label"), .variant(.string("x"))])]
                where interface == "Item" || interface == "Collection" {
                expectError(DBusError.Name.unknownMethod) {
                    _ = try fixture.client.call(destination: SecretServiceFixture.service, path: path,
                                                interface: StandardInterface.properties, member: member, arguments: arguments)
                }
            }
            // Introspection answers everywhere, with what is below the path.
            let xml = try fixture.client.call(destination: SecretServiceFixture.service, path: path,
                                              interface: StandardInterface.introspectable, member: "Introspect").string(at: 0)
            #expect(xml.contains("<node"))
        }
        // Objects named in the arguments keep gnome-keyring's answers: NoSession for a session,
        // NoSuchObject for SetAlias's collection; missing items are left out of GetSecrets.
        expectError("org.freedesktop.Secret.Error.NoSession") {
            try fixture.service("GetSecrets", [.objectPathArray([]), .objectPath("/org/freedesktop/secrets/session/999")])
        }
        expectError("org.freedesktop.Secret.Error.NoSuchObject") {
            try fixture.service("SetAlias", [.string("default"), .objectPath("/org/freedesktop/secrets/collection/nope")])
        }
        #expect(try fixture.service("GetSecrets", [.objectPathArray([item]), .objectPath(session.path)])
                == [.dictionary(keySignature: .objectPath, valueSignature: "(oayays)", [])])
    }
}
