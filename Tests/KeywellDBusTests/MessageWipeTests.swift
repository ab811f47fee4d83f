import CDBus
import Testing
@testable import KeywellDBus

/// `ByteArrayWipe.wipe(message:)` zeroes the byte arrays in libdbus's own buffer, those in
/// the body and those inside variants, and leaves a message without any alone.
@Suite("Byte arrays in a message's buffer are wiped")
struct MessageWipeTests {
    private func message(_ arguments: [DBusValue]) throws -> MessageRef {
        try MessageRef.methodCall(destination: nil, path: "/t", interface: "org.example.T", member: "M", arguments: arguments)
    }

    @Test func bytesInTheBodyAndInVariantsAreZeroed() throws {
        let secret = Array("a secret in libdbus's buffer".utf8)
        let call = try message([.string("label"), .bytes(secret), .stringVariantDict(["v_Data": .bytes(secret)])])
        ByteArrayWipe.wipe(message: call.pointer)
        let after = try call.arguments()
        #expect(after[0] == .string("label"))
        #expect(after[1] == .bytes(Array(repeating: 0, count: secret.count)))
        #expect(after[2].asStringVariantDict()?["v_Data"]?.bytesValue == Array(repeating: 0, count: secret.count))
    }

    @Test func aMessageWithoutBytesIsLeftAsItWas() throws {
        let arguments: [DBusValue] = [.string("default"), .objectPath("/org/example/a"), .uint32(7)]
        let call = try message(arguments)
        ByteArrayWipe.wipe(message: call.pointer)
        #expect(try call.arguments() == arguments)
    }

    /// A reply of `[DBusValue]` is scanned after sending only when the signature the encoder
    /// wrote can hold an `ay`: that signature must be the message's, and the test the same.
    @Test(arguments: [
        ("ay", true), ("aay", true), ("a{sv}", true), ("v", true), ("(oayays)", true), ("a{o(oayays)}", true),
        ("ao", false), ("s", false), ("a{ss}", false), ("yy", false), ("aoao", false), ("(yay)", true),
    ])
    func theWrittenSignatureTellsWhetherBytesMayBeThere(signature: String, mayHoldBytes: Bool) {
        #expect(ByteArrayWipe.mayHoldBytes(DBusSignature(unchecked: signature)) == mayHoldBytes)
    }

    @Test func theEncoderReturnsTheSignatureItWrote() throws {
        let values: [DBusValue] = [.objectPathArray(["/a", "/b"]), .objectPathArray([]), .bytes([1, 2]),
                                   .stringVariantDict(["k": .uint32(1)])]
        let reply = try message([])
        let written = try MessageEncoder.append(values, to: reply.pointer)
        #expect(written.rawValue == String(cString: dbus_message_get_signature(reply.pointer)))
        #expect(written.rawValue == "aoaoaya{sv}")
    }
}
