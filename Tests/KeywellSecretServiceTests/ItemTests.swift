import Foundation
import KeywellDBus
import KeywellTestSupport
import Testing

/// Collections and items through the real daemon: properties, searches, replace, aliases, the
/// native face, signals and errors.
@Suite struct ItemTests {
    static let defaultAlias = "/org/freedesktop/secrets/aliases/default"
    static let login = "/org/freedesktop/secrets/collection/login"

    @Test func itemPropertiesAndChanges() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession()
        let item = try fixture.createItem(["service": "mail", "account": "bob", "xdg:schema": "org.example.Mail"],
                                          label: "Mail", session: session)
        #expect(item.hasPrefix(Self.login + "/"))
        #expect(try fixture.property(item, "Item", "Label") == .string("Mail"))
        #expect(try fixture.property(item, "Item", "Locked") == .bool(false))
        #expect(try fixture.property(item, "Item", "Type") == .string("org.example.Mail"))
        #expect(try fixture.property(item, "Item", "Attributes").asStringStringDict()
                == ["service": "mail", "account": "bob", "xdg:schema": "org.example.Mail"])
        let created = try fixture.property(item, "Item", "Created").uint64Value ?? 0
        #expect(abs(Double(created) - Date().timeIntervalSince1970) < 60)

        // GetAll on the item (what libsecret's item proxies ask for) agrees with every Get.
        let itemProperties = try fixture.client.call(destination: SecretServiceFixture.service, path: item,
                                                     interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                                                     arguments: [.string("org.freedesktop.Secret.Item")]).stringVariantDict(at: 0)
        #expect(Set(itemProperties.keys) == ["Locked", "Attributes", "Label", "Type", "Created", "Modified"])
        for (name, value) in itemProperties { #expect(try fixture.property(item, "Item", name) == value, "\(name)") }

        try fixture.setProperty(item, "Item", "Label", .string("Renamed"))
        try fixture.setProperty(item, "Item", "Attributes", .stringStringDict(["service": "imap", "user": "carol"]))
        #expect(try fixture.property(item, "Item", "Label") == .string("Renamed"))
        #expect(try fixture.search(["service": "imap"]).unlocked == [item])
        #expect(try fixture.search(["service": "mail"]).unlocked.isEmpty)
        #expect(try fixture.getSecret(item, session: session) == "secret")

        // GetAll through the alias path gives the same collection.
        let all = try fixture.client.call(destination: SecretServiceFixture.service, path: Self.defaultAlias,
                                          interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                                          arguments: [.string("org.freedesktop.Secret.Collection")])
        let properties = try all.stringVariantDict(at: 0)
        #expect(properties["Label"] == .string("login"))
        #expect(properties["Locked"] == .bool(false))
        #expect(properties["Items"]?.objectPathArrayValue == [item])
        #expect(try fixture.property(Self.login, "Collection", "Items").objectPathArrayValue == [item])

        #expect(try fixture.call(item, "Item", "Delete") == [.objectPath("/")])
        expectError("org.freedesktop.DBus.Error.UnknownMethod") { _ = try fixture.property(item, "Item", "Label") }
        expectError("org.freedesktop.DBus.Error.UnknownMethod") {
            _ = try fixture.client.call(destination: SecretServiceFixture.service, path: item, interface: "org.freedesktop.DBus.Properties",
                                        member: "GetAll", arguments: [.string("org.freedesktop.Secret.Item")])
        }
        expectError("org.freedesktop.DBus.Error.UnknownMethod") { try fixture.call(item, "Item", "Delete") }
    }

    @Test func replaceFollowsTheExactAttributeSet() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession()
        let first = try fixture.createItem(["a": "1"], secret: "one", session: session)
        let replaced = try fixture.createItem(["a": "1"], secret: "two", replace: true, session: session)
        #expect(replaced == first)
        #expect(try fixture.getSecret(first, session: session) == "two")
        let duplicate = try fixture.createItem(["a": "1"], secret: "three", replace: false, session: session)
        #expect(duplicate != first)
        let superset = try fixture.createItem(["a": "1", "b": "2"], secret: "four", replace: true, session: session)
        #expect(superset != first && superset != duplicate)
        #expect(try fixture.search(["a": "1"]).unlocked == [first, duplicate, superset])
        #expect(try fixture.call(Self.defaultAlias, "Collection", "SearchItems", [.stringStringDict(["b": "2"])])
                == [.objectPathArray([superset])])
    }

    @Test func oneItemWhicheverFaceMadeIt() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession(dh: true)
        try fixture.createItem(["service": "web", "account": "ann"], secret: "from-ss", session: session)
        let found = try fixture.native("CopyMatching", [.stringVariantDict([
            "class": .string("genp"), "svce": .string("web"), "acct": .string("ann"), "r_Data": .bool(true),
        ])])
        #expect(found.first?.asStringVariantDictArray()?.first?["v_Data"]?.bytesValue == Array("from-ss".utf8))

        try fixture.native("Add", [.stringVariantDict([
            "class": .string("genp"), "svce": .string("native-svc"), "acct": .string("nat"), "v_Data": .bytes(Array("from-native".utf8)),
        ])])
        let matches = try fixture.search(["service": "native-svc", "account": "nat"]).unlocked
        #expect(matches.count == 1)
        #expect(try fixture.getSecret(matches[0], session: session) == "from-native")
        #expect(try fixture.property(matches[0], "Item", "Attributes").asStringStringDict()
                == ["xdg:schema": "org.keywell.generic-password", "service": "native-svc", "account": "nat"])
        expectError("org.freedesktop.DBus.Error.NotSupported") {
            try fixture.setProperty(matches[0], "Item", "Attributes", .stringStringDict(["x": "y"]))
        }
    }

    @Test func getSecretsReturnsManyInOneCall() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession(dh: true)
        let items = try (0..<20).map { try fixture.createItem(["n": "\($0)"], secret: "s\($0)", session: session) }
        let missing = Self.login + "/" + String(repeating: "0", count: 32)
        let reply = try fixture.service("GetSecrets", [.objectPathArray(items + [missing, "/org/freedesktop/secrets/x"]),
                                                       .objectPath(session.path)])
        let entries = reply[0].dictionaryEntries ?? []
        #expect(entries.count == 20)
        for (index, entry) in entries.enumerated() {
            #expect(entry.key.objectPathValue == items[index])
            #expect(try session.decode(entry.value) == "s\(index)")
        }
    }

    /// The reply written in place (`DBusBodyWriter`) is exactly the `a{o(oayays)}` the value
    /// tree gave: in a plain session every field is known, so the whole reply is compared. An
    /// empty list, an item gone, an item named twice and one of a locked keychain included.
    @Test func getSecretsWritesExactlyTheValuesOfTheSecretStructs() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        try fixture.native("CreateKeychain", [.string("work.keys"), .bytes(Array("pw".utf8))])
        let session = try fixture.openSession()
        let work = "/org/freedesktop/secrets/collection/work_2ekeys"
        let items = try (0..<4).map { try fixture.createItem(["n": "\($0)"], secret: "s\($0)", session: session) }
        let elsewhere = try fixture.createItem(["n": "w"], secret: "w", in: work, session: session)
        try fixture.call(items[2], "Item", "Delete")
        func expected(_ pairs: [(String, String)]) -> [DBusValue] {
            [.dictionary(keySignature: .objectPath, valueSignature: "(oayays)", pairs.map {
                DBusDictEntry(key: .objectPath($0.0),
                              value: .structure([.objectPath(session.path), .bytes([]), .bytes(Array($0.1.utf8)), .string("text/plain")]))
            })]
        }
        func secrets(_ paths: [String]) throws -> [DBusValue] {
            try fixture.service("GetSecrets", [.objectPathArray(paths), .objectPath(session.path)])
        }
        #expect(try secrets([]) == expected([]))
        #expect(try secrets([items[0], items[2], items[1], items[0], elsewhere, items[3]])
            == expected([(items[0], "s0"), (items[1], "s1"), (items[0], "s0"), (items[3], "s3"), (elsewhere, "w")]))
        try fixture.native("Lock", [.string("work.keys")])
        #expect(try secrets([elsewhere, items[3]]) == expected([(items[3], "s3")]))
        #expect(try secrets([elsewhere]) == expected([]))
    }

    @Test func aliasesAndCollections() throws {
        let fixture = try SecretServiceFixture()
        expectError("org.freedesktop.DBus.Error.UnknownMethod") {
            _ = try fixture.property(Self.defaultAlias, "Collection", "Label")
        }
        #expect(try fixture.service("ReadAlias", [.string("default")]) == [.objectPath("/")])
        try fixture.createLogin()
        try fixture.native("CreateKeychain", [.string("work.keys"), .bytes(Array("pw".utf8))])
        #expect(try fixture.service("ReadAlias", [.string("default")]) == [.objectPath(Self.login)])
        #expect(try fixture.service("ReadAlias", [.string("session")]) == [.objectPath("/org/freedesktop/secrets/collection/session")])
        #expect(try fixture.service("ReadAlias", [.string("nothing")]) == [.objectPath("/")])
        let collections = try fixture.property(SecretServiceFixture.root, "Service", "Collections").objectPathArrayValue ?? []
        #expect(Set(collections) == [Self.login, "/org/freedesktop/secrets/collection/work_2ekeys",
                                     "/org/freedesktop/secrets/collection/session"])

        try fixture.service("SetAlias", [.string("default"), .objectPath("/org/freedesktop/secrets/collection/work_2ekeys")])
        #expect(try fixture.native("GetDefaultKeychain") == [.string("work.keys")])
        #expect(try fixture.property(Self.defaultAlias, "Collection", "Label") == .string("work.keys"))
        expectError("org.freedesktop.DBus.Error.NotSupported") {
            try fixture.service("SetAlias", [.string("mine"), .objectPath(Self.login)])
        }
        expectError("org.freedesktop.Secret.Error.NoSuchObject") {
            try fixture.service("SetAlias", [.string("default"), .objectPath("/org/freedesktop/secrets/collection/nope")])
        }
        // A keychain's label is its own (CollectionSignalTests has the rest).
        try fixture.setProperty(Self.login, "Collection", "Label", .string("x"))
        #expect(try fixture.property(Self.login, "Collection", "Label") == .string("x"))
        #expect(try fixture.native("ListKeychains") == [.stringArray(["login", "work.keys"])], "the name stays")
    }

    @Test func sessionCollectionLivesInMemory() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession()
        let item = try fixture.createItem(["temp": "1", "service": "tmp"], secret: "volatile",
                                          in: "/org/freedesktop/secrets/aliases/session", session: session)
        #expect(item.hasPrefix("/org/freedesktop/secrets/collection/session/"))
        #expect(try fixture.getSecret(item, session: session) == "volatile")
        #expect(try fixture.search(["temp": "1"]).unlocked == [item])
        #expect(try fixture.property("/org/freedesktop/secrets/collection/session", "Collection", "Locked") == .bool(false))
        // Not in any keychain file.
        expectError("org.keywell.Keychain1.Error.ItemNotFound") {
            try fixture.native("CopyMatching", [.stringVariantDict(["class": .string("genp"), "svce": .string("tmp")])])
        }
        let keychains = try FileManager.default.contentsOfDirectory(atPath: fixture.bus.dataHome + "/keywell/keychains")
        for file in keychains {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: fixture.bus.dataHome + "/keywell/keychains/" + file))
            #expect(bytes.range(of: Data("temp".utf8)) == nil, "\(file) holds the session item")
        }
        // The daemon's exit takes it along.
        let pid = pid_t(bitPattern: try fixture.client.unixProcessID(of: try fixture.client.nameOwner(SecretServiceFixture.service)!))
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while (try? fixture.client.nameHasOwner(SecretServiceFixture.service)) == true, Date() < deadline { usleep(20_000) }
        #expect(try fixture.search(["temp": "1"]).unlocked.isEmpty)
    }

    @Test func unknownObjectsAndBadArguments() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let missing = Self.login + "/" + String(repeating: "a", count: 32)
        expectError("org.freedesktop.DBus.Error.UnknownMethod") { _ = try fixture.property(missing, "Item", "Label") }
        expectError("org.freedesktop.DBus.Error.UnknownMethod") {
            _ = try fixture.property("/org/freedesktop/secrets/collection/nope", "Collection", "Items")
        }
        expectError("org.freedesktop.DBus.Error.UnknownMethod") {
            try fixture.call("/org/freedesktop/secrets/session/999", "Session", "Close")
        }
        expectError("org.freedesktop.DBus.Error.UnknownMethod") {
            try fixture.call("/org/freedesktop/secrets/collection/login/zz", "Item", "Delete")
        }
        expectError("org.freedesktop.DBus.Error.InvalidArgs") { try fixture.service("SearchItems", [.string("x")]) }
        let session = try fixture.openSession()
        let wrongType = DBusValue.stringVariantDict(["org.freedesktop.Secret.Item.Attributes": .string("not a dict")])
        expectError("org.freedesktop.DBus.Error.InvalidArgs") {
            try fixture.call(Self.defaultAlias, "Collection", "CreateItem", [wrongType, try session.encode("s"), .bool(false)])
        }
        // Unknown property keys are ignored (newer clients send more).
        let extra = DBusValue.stringVariantDict(["org.example.Future": .string("x")])
        let reply = try fixture.call(Self.defaultAlias, "Collection", "CreateItem", [extra, try session.encode("s"), .bool(false)])
        #expect(try reply.objectPath(at: 0).hasPrefix(Self.login))
    }

    @Test func signalsForItemsAndTheNativeAPI() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let session = try fixture.openSession()
        let ss = SignalWaiter()
        let native = SignalWaiter()
        _ = try fixture.client.addMatch(DBusMatchRule(interface: "org.freedesktop.Secret.Collection")) { ss.deliver($0) }
        _ = try fixture.client.addMatch(DBusMatchRule(interface: "org.keywell.Keychain1", member: "ItemsChanged")) { native.deliver($0) }
        let item = try fixture.createItem(["k": "v"], session: session)
        #expect(ss.wait { $0.member == "ItemCreated" }?.arguments.first == .objectPath(item))
        #expect(ss.wait { $0.member == "ItemCreated" }?.path == Self.login)
        #expect(native.wait()?.arguments.first == .string("login"))
        try fixture.setProperty(item, "Item", "Label", .string("new"))
        #expect(ss.wait { $0.member == "ItemChanged" } != nil)
        try fixture.call(item, "Item", "Delete")
        #expect(ss.wait { $0.member == "ItemDeleted" }?.arguments.first == .objectPath(item))
    }

    @Test func introspectionListsObjects() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        let xml = try fixture.client.call(destination: SecretServiceFixture.service, path: "/org/freedesktop/secrets/collection",
                                          interface: "org.freedesktop.DBus.Introspectable", member: "Introspect").string(at: 0)
        #expect(xml.contains("<node name=\"login\""))
        let service = try fixture.client.call(destination: SecretServiceFixture.service, path: SecretServiceFixture.root,
                                              interface: "org.freedesktop.DBus.Introspectable", member: "Introspect").string(at: 0)
        #expect(service.contains("org.freedesktop.Secret.Service") && service.contains("SearchItems"))
    }
}
