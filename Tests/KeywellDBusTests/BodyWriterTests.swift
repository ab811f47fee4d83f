import CDBus
import Testing
@testable import KeywellDBus

// libdbus (for dbus_message_marshal) has a DBusError of its own.
private typealias DBusError = KeywellDBus.DBusError

/// `DBusBodyWriter` writes the very bytes `MessageEncoder` writes for the same values, and
/// refuses anything that does not fit the declared signature with an error, never an abort.
@Suite("A body written in place")
struct BodyWriterTests {
    /// One secret struct of GetSecrets' reply, written and as a value.
    private struct Secret {
        let path: String
        let session: String
        let parameters: [UInt8]
        let value: [UInt8]
        let contentType: String

        var asValue: DBusValue {
            .structure([.objectPath(session), .bytes(parameters), .bytes(value), .string(contentType)])
        }

        func write(_ writer: inout DBusBodyWriter) throws(DBusError) {
            try writer.appendStructure { (fields) throws(DBusError) in
                try fields.appendObjectPath(session)
                try fields.appendBytes(parameters)
                try fields.appendBytes(value)
                try fields.appendString(contentType)
            }
        }
    }

    private static let signature: DBusSignature = "a{o(oayays)}"

    private func emptyMessage() throws -> MessageRef {
        try MessageRef.methodCall(destination: nil, path: "/t", interface: "org.example.T", member: "M")
    }

    /// The whole message as it goes on the wire (header and body; a fresh message has serial 0).
    private func wire(_ message: MessageRef) -> [UInt8] {
        var buffer: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(message.pointer, &buffer, &length) != 0, let buffer else { return [] }
        defer { dbus_free(buffer) }
        return Array(UnsafeRawBufferPointer(start: buffer, count: Int(length)))
    }

    private func written(_ secrets: [Secret]) throws -> MessageRef {
        let message = try emptyMessage()
        try DBusBodyWriter.write(Self.signature, into: message.pointer) { (writer) throws(DBusError) in
            try writer.appendArray { (dictionary) throws(DBusError) in
                for secret in secrets {
                    try dictionary.appendDictEntry { (pair) throws(DBusError) in
                        try pair.appendObjectPath(secret.path)
                        try secret.write(&pair)
                    }
                }
            }
        }
        return message
    }

    private func encoded(_ secrets: [Secret]) throws -> MessageRef {
        let value = DBusValue.dictionary(keySignature: .objectPath, valueSignature: "(oayays)",
                                         secrets.map { DBusDictEntry(key: .objectPath($0.path), value: $0.asValue) })
        return try MessageRef.methodCall(destination: nil, path: "/t", interface: "org.example.T", member: "M", arguments: [value])
    }

    private static let session = "/org/freedesktop/secrets/session/1"

    private static func item(_ index: Int) -> String {
        "/org/freedesktop/secrets/collection/login/" + String(repeating: "\(index % 10)", count: 32)
    }

    @Test(arguments: [0, 1, 3, 1000]) func theSameBytesAsTheValuesEncoded(count: Int) throws {
        var secrets: [Secret] = []
        for index in 0..<count {
            // DH-like (an IV, ciphertext of 16·k bytes) and plain-like (no parameters) mixed, an
            // item named twice, an empty secret and a content type of several lengths.
            let dh = index % 2 == 0
            secrets.append(Secret(path: Self.item(index % 7), session: Self.session,
                                  parameters: dh ? Array(repeating: UInt8(index & 0xff), count: 16) : [],
                                  value: Array(repeating: UInt8((index * 7) & 0xff), count: index % 5 == 0 ? 0 : 16 * (index % 4 + 1)),
                                  contentType: index % 3 == 0 ? "text/plain" : "application/octet-stream"))
        }
        let mine = try written(secrets)
        let theirs = try encoded(secrets)
        #expect(mine.signature == Self.signature)
        #expect(wire(mine) == wire(theirs))
        #expect(try mine.arguments() == theirs.arguments())
    }

    private func expectRefused(_ signature: DBusSignature = signature, name: String = DBusError.Name.invalidArgs,
                               _ body: (inout DBusBodyWriter) throws(DBusError) -> Void) throws {
        let message = try emptyMessage()
        do {
            try DBusBodyWriter.write(signature, into: message.pointer, body)
            Issue.record("written: \(String(describing: try? message.arguments()))")
        } catch {
            #expect(error.name == name, "\(error.message)")
        }
    }

    @Test func whatDoesNotFitTheSignatureIsRefused() throws {
        let good = Secret(path: Self.item(1), session: Self.session, parameters: [], value: [1], contentType: "text/plain")
        // Nothing written where an array is declared.
        try expectRefused { _ in }
        // A string where the array is.
        try expectRefused { (writer) throws(DBusError) in try writer.appendString("x") }
        // A struct element in a dictionary.
        try expectRefused { (writer) throws(DBusError) in
            try writer.appendArray { (dictionary) throws(DBusError) in try good.write(&dictionary) }
        }
        // A key alone, an entry with a string key, a key and a value and one more.
        try expectRefused { (writer) throws(DBusError) in
            try writer.appendArray { (d) throws(DBusError) in try d.appendDictEntry { (p) throws(DBusError) in try p.appendObjectPath(good.path) } }
        }
        try expectRefused { (writer) throws(DBusError) in
            try writer.appendArray { (d) throws(DBusError) in try d.appendDictEntry { (p) throws(DBusError) in try p.appendString(good.path) } }
        }
        try expectRefused { (writer) throws(DBusError) in
            try writer.appendArray { (d) throws(DBusError) in
                try d.appendDictEntry { (p) throws(DBusError) in
                    try p.appendObjectPath(good.path)
                    try good.write(&p)
                    try p.appendObjectPath(good.path)
                }
            }
        }
        // A struct missing its last field; bytes where a string is declared.
        try expectRefused("(oayays)") { (writer) throws(DBusError) in
            try writer.appendStructure { (f) throws(DBusError) in
                try f.appendObjectPath(Self.session)
                try f.appendBytes([])
                try f.appendBytes([])
            }
        }
        try expectRefused("(oayays)") { (writer) throws(DBusError) in
            try writer.appendStructure { (f) throws(DBusError) in
                try f.appendObjectPath(Self.session)
                try f.appendBytes([])
                try f.appendBytes([])
                try f.appendBytes([])
            }
        }
        // Bytes where an array of strings is declared; a second top-level value.
        try expectRefused("as") { (writer) throws(DBusError) in try writer.appendBytes([1]) }
        try expectRefused("o") { (writer) throws(DBusError) in
            try writer.appendObjectPath("/a")
            try writer.appendObjectPath("/b")
        }
        // An element after an incomplete one.
        try expectRefused("a(os)") { (writer) throws(DBusError) in
            try writer.appendArray { (a) throws(DBusError) in
                try a.appendStructure { (s) throws(DBusError) in try s.appendObjectPath("/a") }
            }
        }
    }

    @Test func invalidPathsAndStringsAreRefusedAsTheEncoderRefusesThem() throws {
        for path in ["not/a/path", "/trailing/", "/double//slash", ""] {
            try expectRefused("o") { (writer) throws(DBusError) in try writer.appendObjectPath(path) }
        }
        for path in ["not/a/path", "/trailing/", ""] {
            #expect(throws: DBusError.self) { try DBusCheckedPath(path) }
        }
        // A checked path is written as the same path given as a string.
        let checked = try DBusCheckedPath("/org/example/a")
        let message = try emptyMessage()
        try DBusBodyWriter.write("oo", into: message.pointer) { (writer) throws(DBusError) in
            try writer.appendObjectPath(checked)
            try writer.appendObjectPath("/org/example/a")
        }
        #expect(try message.arguments() == [.objectPath("/org/example/a"), .objectPath("/org/example/a")])
        try expectRefused("s") { (writer) throws(DBusError) in try writer.appendObjectPath(checked) }
        try expectRefused("s") { (writer) throws(DBusError) in try writer.appendString("nul\0inside") }
        try expectRefused("a{vs}", name: DBusError.Name.invalidSignature) { _ in }
    }

    /// A failure deep inside abandons every container it opened (libdbus then drops the
    /// message, which the connection replaces with an error reply): an error, not an abort.
    @Test func aFailureInsideNestedContainersIsAnError() throws {
        let message = try emptyMessage()
        do {
            try DBusBodyWriter.write("a(os)", into: message.pointer) { (writer) throws(DBusError) in
                try writer.appendArray { (a) throws(DBusError) in
                    try a.appendStructure { (s) throws(DBusError) in
                        try s.appendObjectPath("/a")
                        try s.appendString("ok")
                    }
                    try a.appendStructure { (s) throws(DBusError) in try s.appendObjectPath("bad") }
                }
            }
            Issue.record("an invalid path was written")
        } catch {
            #expect(error.name == DBusError.Name.invalidArgs)
        }
    }
}
