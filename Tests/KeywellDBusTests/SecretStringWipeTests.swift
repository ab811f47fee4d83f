import CDBus
import Foundation
import KeywellSystem
import Testing

@testable import KeywellDBus

// libdbus has a DBusError of its own.
private typealias DBusError = KeywellDBus.DBusError

/// The strings of a method marked `secretStrings` (KWallet's passwords travel as `s`): never a
/// `String` in the service, and zeroed in libdbus's copies of the call and the reply once done
/// (docs/dbus-layer.md, "Secrets in messages"). The ones of every other call are left alone.
@Suite("Secret strings in libdbus's buffers are wiped", .serialized)
struct SecretStringWipeTests {
    /// Takes a reference to a libdbus message (the test service's handler keeps its call's).
    static func retain(_ message: OpaquePointer) {
        dbus_message_ref(message)
    }

    private func message(_ arguments: [DBusValue]) throws -> MessageRef {
        try MessageRef.methodCall(destination: nil, path: "/t", interface: "org.example.T", member: "M", arguments: arguments)
    }

    /// The bytes of the `index`th string of a message's body (top level), as libdbus holds them:
    /// its length from the wire, not up to a NUL.
    private static func stringBytes(_ message: OpaquePointer, at index: Int) -> [UInt8] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        for _ in 0..<index { dbus_message_iter_next(&iter) }
        return stringBytes(&iter)
    }

    private static func stringBytes(_ iter: inout DBusMessageIter) -> [UInt8] {
        var cString: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &cString)
        guard let cString else { return [] }
        // The wire length is the 4 bytes before the string (strings are 4-aligned).
        let length = UnsafeRawPointer(cString).load(fromByteOffset: -4, as: UInt32.self)
        return Array(UnsafeRawBufferPointer(start: cString, count: Int(length)))
    }

    /// The string in the variant of the first entry of the `a{sv}` at `index`.
    private static func firstVariantString(_ message: OpaquePointer, at index: Int) -> [UInt8] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        for _ in 0..<index { dbus_message_iter_next(&iter) }
        var entries = DBusMessageIter(), pair = DBusMessageIter(), variant = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &entries)
        dbus_message_iter_recurse(&entries, &pair)
        dbus_message_iter_next(&pair)
        dbus_message_iter_recurse(&pair, &variant)
        return stringBytes(&variant)
    }

    @Test func stringsInTheBodyAndInVariantsAreZeroedWhenAsked() throws {
        let secret = "a password in libdbus's buffer"
        let call = try message([.string(secret), .objectPath("/org/example/a"), .bytes([1, 2]),
                                .stringVariantDict(["pw": .string(secret)])])
        ByteArrayWipe.wipe(message: call.pointer, strings: true)
        let zeros = [UInt8](repeating: 0, count: secret.utf8.count)
        #expect(Self.stringBytes(call.pointer, at: 0) == zeros)
        #expect(Self.firstVariantString(call.pointer, at: 3) == zeros)
        // Its layout is intact: an object path is no secret, and the walk still reads every value.
        let after = try call.arguments()
        #expect(after[1] == .objectPath("/org/example/a"))
        #expect(after[2] == .bytes([0, 0]))
    }

    @Test func withoutSecretStringsTheStringsStay() throws {
        let arguments: [DBusValue] = [.string("label"), .stringVariantDict(["pw": .string("not a secret")]), .bytes([7])]
        let call = try message(arguments)
        ByteArrayWipe.wipe(message: call.pointer)
        let after = try call.arguments()
        #expect(after[0] == .string("label"))
        #expect(after[1] == .stringVariantDict(["pw": .string("not a secret")]))
        #expect(after[2] == .bytes([0]))
    }

    @Test func theMarkedArgumentsDecodeIntoLockedMemory() throws {
        let call = try message([.string("label"), .string("pässwörd ✓"), .string("after")])
        let decoded = try MessageDecoder.decodeArguments(of: call.pointer, secretStrings: [1])
        #expect(decoded[0] == .string("label"))
        #expect(decoded[1].secretStringValue?.equalsUTF8(of: "pässwörd ✓") == true)
        #expect(decoded[1].stringValue == nil)
        #expect(decoded[2] == .string("after"))
        // A secret string goes out as the `s` it came as.
        let reply = try message([.secretString(SecretBytes(copying: Array("pässwörd ✓".utf8)))])
        #expect(try reply.arguments() == [.string("pässwörd ✓")])
        #expect(throws: DBusError.self) { try message([.secretString(SecretBytes(copying: [0x61, 0, 0x62]))]) }
        #expect(throws: DBusError.self) { try message([.secretString(SecretBytes(copying: [0x61, 0xff]))]) }
    }

    /// The attack: a password sent through a real bus to a method that carries it as a string.
    /// Once the call is answered, libdbus's copies of the call and of the reply in the service
    /// (kept alive here; freed, they are not cleared) must hold zeros where the password was.
    @Test func aPasswordRoundTripLeavesZerosInTheServicesMessages() throws {
        let fixture = try ServiceFixture()
        let password = "kwallet-password-\(UUID().uuidString)-ünïcødé ✓"
        let client = try #require(fixture.client.uniqueName)
        let replies = LockedValue<[UnsafeSendablePointer]>([])
        DBusConnection.sentReplyObserver.withLock { observer in
            observer = { reply in
                guard let destination = dbus_message_get_destination(reply), String(cString: destination) == client else { return }
                dbus_message_ref(reply)
                replies.mutate { $0.append(UnsafeSendablePointer(reply)) }
            }
        }
        defer {
            DBusConnection.sentReplyObserver.withLock { $0 = nil }
            for reply in replies.value { dbus_message_unref(reply.pointer) }
        }
        ServiceFixture.keptSecretCalls.value = []
        let answer = try fixture.call("KeepSecret", [.string("entry"), .string(password)])
        // The caller gets the password, non-ASCII and all.
        #expect(answer == [.string(password), .stringVariantDict([("entry", .string(password))])])

        let kept = try #require(ServiceFixture.keptSecretCalls.value.first)
        defer { dbus_message_unref(kept.message.pointer) }
        #expect(kept.arguments[1].secretStringValue?.equalsUTF8(of: password) == true)
        // The call is released after its reply: wait for its wipe.
        let zeros = [UInt8](repeating: 0, count: password.utf8.count)
        #expect(eventually { Self.stringBytes(kept.message.pointer, at: 1) == zeros },
                "the password is still in libdbus's copy of the call")
        #expect(Self.stringBytes(kept.message.pointer, at: 0) == [UInt8](repeating: 0, count: 5))

        let reply = try #require(replies.value.first { dbus_message_get_reply_serial($0.pointer) == dbus_message_get_serial(kept.message.pointer) })
        #expect(Self.stringBytes(reply.pointer, at: 0) == zeros, "the password is still in libdbus's copy of the reply")
        #expect(Self.firstVariantString(reply.pointer, at: 1) == zeros, "the list's password is still in the reply")
    }

    /// The same round trip to a method not marked: its strings are not scanned or touched.
    @Test func anUnmarkedCallKeepsItsStrings() throws {
        let fixture = try ServiceFixture()
        let text = "plain-\(UUID().uuidString)"
        ServiceFixture.kept.value = []
        #expect(try fixture.call("Keep", [.string(text)]) == [.string(text)])
        #expect(ServiceFixture.kept.value == [.string(text)])
    }
}

extension SecretBytes {
    /// Equal to `text`'s UTF-8 (a test's expectation; a `String` is no secret's home).
    func equalsUTF8(of text: String) -> Bool {
        withUnsafeBytes { bytes in bytes.elementsEqual(text.utf8) }
    }
}
