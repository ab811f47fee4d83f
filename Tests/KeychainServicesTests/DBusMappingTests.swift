import Foundation
import KeywellAPI
import KeywellDBus
import KeywellProtocol
import Testing

@testable import KeychainServices

/// Wire values ↔ D-Bus values, and D-Bus failures → OSStatus.
@Suite struct DBusMappingTests {
    @Test func wireValuesTravelAsTheDaemonExpects() {
        #expect(WireCodec.dbusValue(.string("a"), key: "acct") == .string("a"))
        #expect(WireCodec.dbusValue(.data(Data([1, 2])), key: "gena") == .bytes([1, 2]))
        #expect(WireCodec.dbusValue(.bool(true), key: "invi") == .bool(true))
        #expect(WireCodec.dbusValue(.integer(443), key: "port") == .uint32(443))
        #expect(WireCodec.dbusValue(.integer(-1), key: "port") == .int64(-1))
        #expect(WireCodec.dbusValue(.integer(443), key: "cdat") == .int64(443))
        #expect(WireCodec.dbusValue(.strings(["a", "b"]), key: "m_SearchList") == .stringArray(["a", "b"]))
    }

    @Test func repliesAcceptAnyIntegerType() {
        let integers: [DBusValue] = [.byte(7), .int16(7), .uint16(7), .int32(7), .uint32(7), .int64(7), .uint64(7)]
        for value in integers { #expect(WireCodec.replyValue(value) == .integer(7)) }
        #expect(WireCodec.replyValue(.variant(.uint32(443))) == .integer(443))
        #expect(WireCodec.replyValue(.array(elementSignature: .byte, [.byte(1)])) == .data(Data([1])))
        #expect(WireCodec.replyValue(.double(1.5)) == nil)
    }

    @Test func replyDictionaries() throws {
        let reply = DBusValue.stringVariantDict(["acct": .string("a"), "port": .uint32(80), "v_Data": .bytes([9])])
        #expect(try WireCodec.replyDictionary(reply, of: .add) == ["acct": .string("a"), "port": .integer(80), "v_Data": .data(Data([9]))])
        #expect(throws: KeychainError.self) { try WireCodec.replyDictionary(.string("x"), of: .add) }
        let bad = DBusValue.stringVariantDict(["x": .double(2)])
        #expect((try? WireCodec.replyDictionary(bad, of: .add)) == nil)
    }

    @Test func secretsAreHandedOutForWiping() {
        var secrets: [[UInt8]] = []
        let value = DBusMapping.dbusDictionary(["v_Data": .data(Data([5, 6])), "acct": .string("a")], secrets: &secrets)
        #expect(secrets == [[5, 6]])
        #expect(value.asStringVariantDict()?["v_Data"] == .bytes([5, 6]))
        var copy = secrets[0]
        PasswordBytes.wipe(&copy)
        #expect(copy == [0, 0])
    }

    @Test func daemonErrorsKeepTheirStatus() {
        let cases: [(String, OSStatus)] = [
            ("DuplicateItem", errSecDuplicateItem), ("ItemNotFound", errSecItemNotFound),
            ("InteractionNotAllowed", errSecInteractionNotAllowed), ("Param", errSecParam),
            ("NoSuchKeychain", errSecNoSuchKeychain), ("AuthFailed", errSecAuthFailed),
        ]
        for (name, status) in cases {
            let error = DBusError(name: "org.keywell.Keychain1.Error.\(name)", message: "\(status): \(SecStatus.message(for: status))")
            #expect(DBusMapping.keychainError(error).status == status)
        }
    }

    @Test func busFailuresAreNotAvailable() {
        let names = [
            DBusError.Name.serviceUnknown, DBusError.Name.noReply, DBusError.Name.disconnected,
            DBusError.Name.nameHasNoOwner, "org.freedesktop.DBus.Error.Spawn.ExecFailed",
            "org.freedesktop.DBus.Error.NoServer",
        ]
        for name in names {
            #expect(DBusMapping.keychainError(DBusError(name: name, message: "")).status == errSecNotAvailable, "\(name)")
        }
        #expect(DBusMapping.keychainError(.timedOut(after: .seconds(1))).status == errSecNotAvailable)
        #expect(DBusMapping.keychainError(.invalidArgs("x")).status == errSecParam)
        #expect(DBusMapping.keychainError(.unknownMethod("x")).status == errSecUnimplemented)
        #expect(DBusMapping.keychainError(.failed("x")).status == errSecIO)
    }
}
