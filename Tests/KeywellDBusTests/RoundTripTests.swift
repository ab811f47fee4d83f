import Foundation
import KeywellDBus
import Testing

@Suite("Values round-trip through a real bus")
struct RoundTripTests {
    let fixture: ServiceFixture
    init() throws { fixture = try ServiceFixture() }

    func echo(_ values: [DBusValue]) throws -> [DBusValue] {
        try fixture.call("Echo", values)
    }

    @Test func everyBasicType() throws {
        let values: [DBusValue] = [
            .byte(0), .byte(255), .bool(true), .bool(false),
            .int16(.min), .int16(.max), .uint16(.max), .int32(.min), .int32(.max), .uint32(.max),
            .int64(.min), .int64(.max), .uint64(.max), .double(-1.5), .double(.infinity),
            .string(""), .string("héllo wörld ✓ 🔑"), .objectPath("/"), .objectPath("/org/keywell/Keychain"),
            .signature(""), .signature("a{sv}(oayays)"),
        ]
        #expect(try echo(values) == values)
    }

    @Test func variantsOfEveryBasicType() throws {
        let basics: [DBusValue] = [.byte(1), .bool(true), .int16(-2), .uint16(3), .int32(-4), .uint32(5), .int64(-6),
                                   .uint64(7), .double(8.5), .string("nine"), .objectPath("/ten"), .signature("s")]
        let values = basics.map(DBusValue.variant) + [.variant(.variant(.variant(.string("deep"))))]
        #expect(try echo(values) == values)
    }

    @Test func containers() throws {
        let values: [DBusValue] = [
            .stringArray(["a", "b", ""]),
            .emptyArray(of: .string),
            .emptyArray(of: "a{sv}"),
            .emptyArray(of: "(oayays)"),
            .stringVariantDict([:]),
            .stringVariantDict(["class": .string("genp"), "acct": .string("me"), "port": .uint16(443),
                                "v_Data": .bytes([1, 2, 3]), "invi": .bool(true), "cdat": .int64(1_700_000_000_000)]),
            .stringVariantDictArray([["a": .int32(1)], [:], ["b": .stringArray(["x"])]]),
            .stringStringDict(["xdg:schema": "org.example.Password", "user": "me"]),
            .objectPathArray(["/a", "/a/b"]),
            .structure([.objectPath("/s/1"), .bytes([]), .bytes([0, 255]), .string("text/plain")]),
            .dictionary(keySignature: .objectPath, valueSignature: "(oayays)", [
                DBusDictEntry(key: .objectPath("/i/1"), value: .structure([.objectPath("/s"), .bytes([]), .bytes([9]), .string("")])),
            ]),
            .dictionary(keySignature: .uint32, valueSignature: "av", [
                DBusDictEntry(key: .uint32(1), value: .array(elementSignature: .variant, [.variant(.int32(1)), .variant(.string("x"))])),
            ]),
            // One-letter entry types are read off the first entry; others from the array's signature.
            .dictionary(keySignature: .int64, valueSignature: .objectPath, [DBusDictEntry(key: .int64(-1), value: .objectPath("/x"))]),
            .dictionary(keySignature: .string, valueSignature: "a{ss}", [
                DBusDictEntry(key: .string("k"), value: .stringStringDict(["a": "b"])),
            ]),
            .dictionary(keySignature: .string, valueSignature: "a{ss}", []),
            .array(elementSignature: "aai", [.array(elementSignature: "ai", [.array(elementSignature: .int32, [.int32(1), .int32(2)])])]),
            .array(elementSignature: .bool, [.bool(true), .bool(false)]),
            .array(elementSignature: .double, [.double(1), .double(-2)]),
            .array(elementSignature: .uint64, [.uint64(.max)]),
            .variant(.stringVariantDict(["nested": .variant(.stringStringDict(["k": "v"]))])),
            .variant(.emptyArray(of: .objectPath)),
        ]
        #expect(try echo(values) == values)
    }

    /// Arrays of every one-letter element type decode without asking libdbus for a signature:
    /// each must still come back with its own element type.
    @Test func arraysOfEveryOneLetterElementType() throws {
        let values: [DBusValue] = [
            .array(elementSignature: .bool, [.bool(false), .bool(true)]),
            .array(elementSignature: .int16, [.int16(.min), .int16(7)]),
            .array(elementSignature: .uint16, [.uint16(.max)]),
            .array(elementSignature: .int32, [.int32(-1)]),
            .array(elementSignature: .uint32, [.uint32(3), .uint32(4)]),
            .array(elementSignature: .int64, [.int64(.min)]),
            .array(elementSignature: .uint64, []),
            .array(elementSignature: .double, [.double(0.5)]),
            .array(elementSignature: .string, [.string(""), .string("é")]),
            .array(elementSignature: .objectPath, [.objectPath("/")]),
            .array(elementSignature: .signature, [.signature("a{sv}")]),
            .array(elementSignature: .variant, [.variant(.bytes([1]))]),
            .bytes([0, 1, 255]),
            .bytes([]),
            .structure([.objectPathArray([]), .stringArray(["x"]), .bytes([7])]),
        ]
        #expect(try echo(values) == values)
    }

    @Test func byteArrayOfOneMebibyte() throws {
        let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let reply = try echo([.bytes(bytes)])
        #expect(reply.first?.bytesValue == bytes)
    }

    @Test func byteArrayInEitherFormDecodesAsBytes() throws {
        let reply = try echo([.array(elementSignature: .byte, [.byte(1), .byte(2)])])
        #expect(reply == [.bytes([1, 2])])
    }

    @Test func millionElementArrays() throws {
        let count = 1_000_000
        let integers = DBusValue.array(elementSignature: .uint32, (0..<count).map { .uint32(UInt32($0)) })
        let start = ContinuousClock.now
        #expect(try echo([integers]) == [integers])
        let strings = DBusValue.array(elementSignature: .string, (0..<count).map { .string(String($0 % 1000)) })
        #expect(try echo([strings]) == [strings])
        let variants = DBusValue.array(elementSignature: .variant, (0..<count).map { _ in .variant(.bool(true)) })
        #expect(try echo([variants]) == [variants])
        print("[keywell-dbus] three million-element round trips took \(ContinuousClock.now - start)")
    }

    @Test func deepestAllowedNesting() throws {
        var value = DBusValue.string("core")
        for _ in 0..<60 { value = .variant(value) }
        #expect(try echo([value]) == [value])
    }

    @Test func accessors() throws {
        let reply = try echo([.stringVariantDict(["n": .uint16(8), "s": .string("x")]), .stringStringDict(["a": "b"]),
                              .stringVariantDictArray([["k": .bool(true)]])])
        let dict = try #require(reply[0].asStringVariantDict())
        #expect(dict["n"]?.integerValue == 8)
        #expect(dict["s"]?.stringValue == "x")
        #expect(reply[1].asStringStringDict() == ["a": "b"])
        #expect(reply[2].asStringVariantDictArray()?.first?["k"] == .bool(true))
        #expect(reply[0].asStringStringDict() == nil)
        #expect(reply[1].asStringVariantDict() == nil)
        #expect(throws: DBusError.self) { try reply.string(at: 0) }
        #expect(throws: DBusError.self) { try reply.string(at: 9) }
    }
}

@Suite("File descriptors")
struct FileDescriptorTests {
    @Test func unixFDTravelsBothWays() throws {
        let fixture = try ServiceFixture()
        #expect(fixture.client.canPassFileDescriptors)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        // Echo sends the received (duplicated) descriptor back; it still reaches our pipe.
        let reply = try fixture.call("Echo", [.unixFD(fds[1]), .variant(.unixFD(fds[1]))])
        let returned = try #require(reply.first?.unixFDValue)
        #expect(returned != fds[1])
        var byte: UInt8 = 42
        #expect(write(returned, &byte, 1) == 1)
        close(returned)
        if let inVariant = reply.last?.variantValue?.unixFDValue { close(inVariant) }
        var received: UInt8 = 0
        #expect(read(fds[0], &received, 1) == 1)
        #expect(received == 42)
    }

    /// A descriptor sent where none is taken (a refused call, an unknown method, a handler that
    /// only echoes) must not stay open in the service: once ours is closed too, the pipe's
    /// reader sees its end. Before the service closed its copies, the reader waited for ever.
    @Test(arguments: ["Forget", "NoSuchMethod", "Echo"])
    func descriptorsNoHandlerTookAreClosedWhenTheCallEnds(_ member: String) throws {
        let fixture = try ServiceFixture()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let outcome = Result { () throws(DBusError) in try fixture.call(member, [.unixFD(fds[1]), .variant(.unixFD(fds[1]))]) }
        close(fds[1])
        if case .success(let reply) = outcome {
            // Echo's reply carries duplicates of its own; they are ours to close.
            for value in reply {
                if let fd = value.unixFDValue ?? value.variantValue?.unixFDValue { close(fd) }
            }
        }
        // Hang guard only: the end of the pipe is the positive signal.
        var reader = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
        try #require(poll(&reader, 1, 30_000) == 1, "the service still holds the pipe's write end")
        var byte: UInt8 = 0
        #expect(read(fds[0], &byte, 1) == 0)
    }
}
