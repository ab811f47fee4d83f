import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

@Suite struct IntrospectionTests {
    /// The repository's dbus/ folder (this file is Tests/KeywellDaemonTests/…).
    static let interfaceXMLPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("dbus/org.keywell.Keychain1.xml").path

    @Test func introspectionShowsTheShippedInterface() throws {
        let fixture = try DaemonFixture()
        let xml = try fixture.client.call(destination: KeywellNames.busName, path: KeywellNames.objectPath,
                                          interface: StandardInterface.introspectable, member: "Introspect").string(at: 0)
        let served = try DBusInterface.parse(introspectionXML: xml).first { $0.name == KeywellNames.interface }
        let shipped = try DBusInterface.parse(introspectionXML: String(contentsOfFile: Self.interfaceXMLPath, encoding: .utf8))
        #expect(served == shipped.first)
        #expect(served?.methods.count == 35)
        #expect(served?.signals.count == 5)
    }
}

/// Hostile or sloppy calls get Param, and the daemon keeps serving.
@Suite struct MalformedCallTests {
    @Test func wrongSignaturesAreParam() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        let wrong: [(String, [DBusValue])] = [
            ("Add", ["not a dictionary"]),
            ("Add", []),
            ("Add", [.stringVariantDict(genp("a")), "extra"]),
            ("CopyMatching", [.stringStringDict(["class": "genp"])]),
            ("Unlock", ["login", "password as a string"]),
            ("Lock", [.uint32(1)]),
            ("SetSearchList", ["login"]),
            ("GetInfo", []),
            ("LockAll", ["unexpected"]),
            ("CreateKeychain", ["x", .array(elementSignature: .uint32, [.uint32(1)])]),
        ]
        for (member, arguments) in wrong {
            expectKeychainError("Param", SecStatus.param) { try fixture.call(member, arguments) }
        }
        #expect(try fixture.info("login")["locked"] == false, "still serving")
    }

    @Test func wrongValueTypesAreParam() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        let bad: [[String: DBusValue]] = [
            genp("a", ["labl": .double(1.5)]),
            genp("a", ["labl": .objectPath("/x")]),
            genp("a", ["labl": .variant("nested")]),
            genp("a", ["labl": .structure(["x"])]),
            genp("a", ["labl": .stringVariantDict(["x": "y"])]),
            genp("a", ["labl": .array(elementSignature: .int32, [.int32(1)])]),
            genp("a", ["port": .uint64(UInt64.max)]),
            genp("a", ["invi": "yes"]),
            genp("a", ["v_Data": "a string secret"]),
            genp("a", ["acct": .bytes([0xC3, 0x28])]),  // invalid UTF-8 where a string belongs
            ["class": .uint32(1)],
        ]
        for attributes in bad {
            expectKeychainError("Param", SecStatus.param) { try fixture.add(attributes) }
        }
        // The same key twice.
        let repeated = DBusValue.dictionary(keySignature: .string, valueSignature: .variant, [
            DBusDictEntry(key: "class", value: .variant("genp")), DBusDictEntry(key: "class", value: .variant("genp")),
        ])
        expectKeychainError("Param", SecStatus.param) { try fixture.call("Add", [repeated]) }
        try fixture.add(genp("still-works"))
    }

    @Test func hugeInputsAreRefusedQuickly() throws {
        let fixture = try DaemonFixture()
        try fixture.createKeychain("login")
        // Each refusal must come within its call's timeout (60 s; 20 s for the Add), a hang
        // guard: a check whose cost grew faster than the list would take hours here. How fast it
        // is belongs to the benchmarks.
        let million = (0..<1_000_000).map { DBusValue.string("k\($0)") }
        expectKeychainError("Param", SecStatus.param) {
            try fixture.call("SetSearchList", [.array(elementSignature: .string, million)], timeout: .seconds(60))
        }
        expectKeychainError("Param", SecStatus.param) {
            try fixture.call("CopyMatching", [.stringVariantDict(["class": "genp", "m_SearchList": .array(elementSignature: .string, million)])],
                             timeout: .seconds(60))
        }
        let manyKeys = Dictionary(uniqueKeysWithValues: (0..<100_000).map { ("key\($0)", DBusValue.bool(true)) })
        expectKeychainError("Param", SecStatus.param) { try fixture.add(manyKeys) }
        // A big secret is data, not an attack: it is stored.
        try fixture.add(genp("big", ["v_Data": .bytes([UInt8](repeating: 7, count: 1_000_000))]))
        let found = try fixture.copyMatching(genp("big", ["r_Data": true]))
        #expect(found.first?["v_Data"]?.bytesValue?.count == 1_000_000)
    }

    @Test func unknownMethodsAndObjects() throws {
        let fixture = try DaemonFixture()
        #expect(throws: DBusError.self) { try fixture.call("NoSuchMethod") }
        #expect(throws: DBusError.self) {
            try fixture.client.call(destination: KeywellNames.busName, path: "/elsewhere", interface: KeywellNames.interface,
                                    member: "LockAll")
        }
        try fixture.call("LockAll")
    }
}

@Suite struct KWalletIntrospectionTests {
    static let interfaceXMLPath = URL(fileURLWithPath: IntrospectionTests.interfaceXMLPath)
        .deletingLastPathComponent().appendingPathComponent("org.kde.KWallet.xml").path

    /// Both objects serve the interface dbus/org.kde.KWallet.xml declares, overloads included.
    @Test func introspectionShowsTheShippedKWalletInterface() throws {
        let fixture = try DaemonFixture()
        try fixture.call("GetSearchList")  // starts keywelld, which owns both KWallet names by then
        let shipped = try DBusInterface.parse(introspectionXML: String(contentsOfFile: Self.interfaceXMLPath, encoding: .utf8))
        for (name, path) in zip(KWalletProtocol.busNames, KWalletProtocol.objectPaths) {
            let xml = try fixture.client.call(destination: name, path: path,
                                              interface: StandardInterface.introspectable, member: "Introspect").string(at: 0)
            let served = try DBusInterface.parse(introspectionXML: xml).first { $0.name == KWalletProtocol.interface }
            #expect(served == shipped.first)
            #expect(served?.methods.count == 44)
            #expect(served?.signals.count == 12)
        }
    }

    /// Overloads are told apart by their signatures: `isOpen(s)` and `isOpen(i)` both answer.
    @Test func overloadsAnswerByTheirSignature() throws {
        let fixture = try DaemonFixture()
        try fixture.call("GetSearchList")
        let path = KWalletProtocol.objectPaths[0], name = KWalletProtocol.busNames[0]
        let byName = try fixture.client.call(destination: name, path: path, interface: KWalletProtocol.interface,
                                             member: "isOpen", arguments: ["nothing"])
        let byHandle = try fixture.client.call(destination: name, path: path, interface: KWalletProtocol.interface,
                                               member: "isOpen", arguments: [.int32(12)])
        #expect(byName == [.bool(false)])
        #expect(byHandle == [.bool(false)])
    }
}
