import Foundation
import KeywellDBus
import KeywellProtocol
import KeywellTestSupport
import Testing

/// The byte caps of single values (ServiceLimits; docs/secret-service.md, "Limits") on both
/// faces of the real keywelld: one byte over a cap is refused with the cap in the message and
/// without the value, exactly the cap is taken, and nothing is stored by a refused call.
@Suite(.serialized)
struct ValueCapTests {
    static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"
    static let param = "org.keywell.Keychain1.Error.Param"
    static let defaultCollection = "\(SecretServiceFixture.root)/aliases/default"

    /// A string of `count` bytes that no message would contain by chance.
    static func filler(_ count: Int) -> String { String(repeating: "Q", count: count) }

    func expectRefused(_ name: String, cap: Int, _ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("accepted", sourceLocation: sourceLocation)
        } catch {
            let error = error as? DBusError
            #expect(error?.name == name, "\(String(describing: error))", sourceLocation: sourceLocation)
            #expect(error?.message.contains("at most \(cap)") == true, "\(String(describing: error))", sourceLocation: sourceLocation)
            #expect(error?.message.contains(Self.filler(64)) == false, "the message echoes the value", sourceLocation: sourceLocation)
        }
    }

    @Test func secretServiceValuesOverTheirCapsAreRefused() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        for dh in [false, true] {
            let session = try fixture.openSession(dh: dh)
            let tag = dh ? "caps-dh" : "caps-plain"
            func create(label: String = "l", attributes: [String: String]? = nil, type: String? = nil,
                        secret: String = "s") throws {
                var properties: [String: DBusValue] = [
                    "org.freedesktop.Secret.Item.Label": .string(label),
                    "org.freedesktop.Secret.Item.Attributes": .stringStringDict(attributes ?? ["app": tag]),
                ]
                if let type { properties["org.freedesktop.Secret.Item.Type"] = .string(type) }
                _ = try fixture.call(Self.defaultCollection, "Collection", "CreateItem",
                                     [.stringVariantDict(properties), try session.encode(secret), .bool(true)])
            }
            expectRefused(Self.limitsExceeded, cap: ServiceLimits.bytesPerLabel) {
                try create(label: Self.filler(ServiceLimits.bytesPerLabel + 1))
            }
            expectRefused(Self.limitsExceeded, cap: ServiceLimits.bytesPerSecret) {
                try create(secret: Self.filler(ServiceLimits.bytesPerSecret + 1))
            }
            expectRefused(Self.limitsExceeded, cap: ServiceLimits.bytesPerAttributeValue) {
                try create(attributes: ["app": Self.filler(ServiceLimits.bytesPerAttributeValue + 1)])
            }
            expectRefused(Self.limitsExceeded, cap: ServiceLimits.bytesPerAttributeName) {
                try create(attributes: [Self.filler(ServiceLimits.bytesPerAttributeName + 1): "v"])
            }
            expectRefused(Self.limitsExceeded, cap: ServiceLimits.bytesPerAttributeValue) {
                try create(type: Self.filler(ServiceLimits.bytesPerAttributeValue + 1))
            }
            expectRefused(Self.limitsExceeded, cap: ServiceLimits.bytesPerAttributeValue) {
                _ = try fixture.search(["app": Self.filler(ServiceLimits.bytesPerAttributeValue + 1)])
            }
            #expect(try fixture.search(["app": tag]).unlocked.isEmpty, "a refused call stored something")
            // At the caps, every value is taken.
            try create(label: Self.filler(ServiceLimits.bytesPerLabel), secret: Self.filler(ServiceLimits.bytesPerSecret))
        }
        let item = try #require(try fixture.search(["app": "caps-dh"]).unlocked.first)
        let session = try fixture.openSession()
        #expect(try fixture.getSecret(item, session: session).utf8.count == ServiceLimits.bytesPerSecret)
        expectRefused(Self.limitsExceeded, cap: ServiceLimits.bytesPerLabel) {
            try fixture.setProperty(item, "Item", "Label", .string(Self.filler(ServiceLimits.bytesPerLabel + 1)))
        }
        #expect(try fixture.property(item, "Item", "Label").stringValue?.utf8.count == ServiceLimits.bytesPerLabel)
    }

    @Test func nativeValuesOverTheirCapsAreRefused() throws {
        let fixture = try SecretServiceFixture()
        try fixture.createLogin()
        func add(_ extra: [String: DBusValue]) throws {
            var attributes: [String: DBusValue] = ["class": .string("genp"), "svce": .string("caps"), "acct": .string("a")]
            attributes.merge(extra) { $1 }
            try fixture.native("Add", [.stringVariantDict(attributes)])
        }
        expectRefused(Self.param, cap: ServiceLimits.bytesPerLabel) {
            try add(["labl": .string(Self.filler(ServiceLimits.bytesPerLabel + 1))])
        }
        expectRefused(Self.param, cap: ServiceLimits.bytesPerSecret) {
            try add(["v_Data": .bytes(Array(Self.filler(ServiceLimits.bytesPerSecret + 1).utf8))])
        }
        expectRefused(Self.param, cap: ServiceLimits.bytesPerAttributeValue) {
            try add(["gena": .bytes(Array(Self.filler(ServiceLimits.bytesPerAttributeValue + 1).utf8))])
        }
        expectRefused(Self.param, cap: ServiceLimits.bytesPerAttributeName) {
            try add([Self.filler(ServiceLimits.bytesPerAttributeName + 1): .string("v")])
        }
        expectRefused(Self.param, cap: ServiceLimits.bytesPerKeychainName) {
            try fixture.native("CreateKeychain", [.string(Self.filler(ServiceLimits.bytesPerKeychainName + 1)), .bytes([1])])
        }
        expectRefused(Self.param, cap: ServiceLimits.bytesPerSecret) {
            try fixture.native("Unlock", [.string("login"), .bytes(Array(Self.filler(ServiceLimits.bytesPerSecret + 1).utf8))])
        }
        expectRefused(Self.param, cap: ServiceLimits.bytesPerKeychainName) {
            try fixture.native("SetSearchList", [.stringArray(["login", Self.filler(ServiceLimits.bytesPerKeychainName + 1)])])
        }
        // At the caps, the item is stored; the refusals stored nothing.
        try add(["labl": .string(Self.filler(ServiceLimits.bytesPerLabel)),
                 "v_Data": .bytes(Array(Self.filler(ServiceLimits.bytesPerSecret).utf8)),
                 "gena": .bytes(Array(Self.filler(ServiceLimits.bytesPerAttributeValue).utf8))])
        let found = try fixture.native("CopyMatching", [.stringVariantDict(["class": .string("genp"), "svce": .string("caps"),
                                                                            "m_Limit": .string("m_LimitAll")])])
        #expect(found.first?.arrayElements?.count == 1)
    }
}
